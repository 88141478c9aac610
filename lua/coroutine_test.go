package lua

import (
	"runtime"
	"testing"
	"time"
)

// TestSuspendedCoroutinesAreFreed: a coroutine left suspended (an iterator
// broken out of) must not keep memory for the rest of its process's life.
// gopher-lua registered a context per coroutine with the process's
// context, which only the coroutine's end or the process's exit released.
func TestSuspendedCoroutinesAreFreed(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("main", `
return { main = function(n)
  local function gen() for i = 1, 3 do coroutine.yield(i) end end
  for i = 1, n do
    local next_value = coroutine.wrap(gen)
    assert(next_value() == 1)
    local co = coroutine.create(gen)
    assert(coroutine.resume(co))
  end
  process.inbox():receive()
  return "ok"
end }`)
	const n = 50_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pid := h.Spawn(e, n)
	eventually(t, 30*time.Second, "the script to wait for mail", func() bool { return h.Node.Idle(pid) })
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / (2 * n)
	if per > 64 {
		t.Fatalf("%d bytes kept per suspended coroutine", per)
	}
}
