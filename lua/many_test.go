package lua

import (
	"testing"
	"time"
)

// TestTenThousandProcesses runs 10,000 Lua processes at once: each waits
// for a ping, answers the asker, and stays alive until every one has
// answered, so all of them are alive together.
func TestTenThousandProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 processes: not in -short")
	}
	const n = 10000
	h := newHarness(t)
	h.Entry("member", `
return { main = function()
  local inbox = process.inbox()
  local msg = inbox:receive()
  msg:reply(msg:payload() * 2)
  inbox:receive() -- stay alive until released
  return "released"
end }`)
	e := h.Entry("coordinator", `
return { main = function(n)
  local pids = {}
  for i = 1, n do pids[i] = assert(process.spawn("member")) end
  for i = 1, n do
    local v = assert(process.ask(pids[i], "ping", i, "30s"))
    assert(v == i * 2, "bad answer")
  end
  local live = n
  for i = 1, n do assert(process.monitor(pids[i])) end
  local events = process.events()
  for i = 1, n do process.send(pids[i], "release") end
  for i = 1, n do
    local ev = events:receive()
    assert(ev.result.value == "released", "member exit")
  end
  return "ok"
end }`)
	start := time.Now()
	pid := h.Spawn(e, float64(n))
	eventually(t, 60*time.Second, "10,000 members alive", func() bool { return h.Node.Count() >= n+1 })
	ex := h.Wait(pid, 2*time.Minute)
	if ex.Err != nil || ex.Value != "ok" {
		t.Fatalf("coordinator: %v %v", ex.Value, ex.Err)
	}
	t.Logf("10,000 processes spawned, asked and released in %s", time.Since(start))
	if h.Node.Count() != 0 {
		eventually(t, 30*time.Second, "every member gone", func() bool { return h.Node.Count() == 0 })
	}
}
