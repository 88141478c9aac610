package lua

import (
	"context"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
)

// A process's state is built with as few allocations as it needs: the
// state, its allocator, data and call stacks, the global and registry
// tables and the global record. The global table is the one NewState
// makes, not a second one.
func TestNewStateAllocations(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("idle", `return { main = function() end }`)
	p := &Process{host: h.Kind.(*Host), env: h.Env, entry: e, spec: e.Spec.(*Spec)}
	p.ctx = &procContext{Context: context.Background(), p: p}
	allocs := testing.AllocsPerRun(100, func() {
		L := newState(p)
		L.Close()
	})
	t.Logf("%.0f allocations", allocs)
	if allocs > 9 {
		t.Fatalf("building a state allocates %.0f times, want at most 9", allocs)
	}
}

// Finding the method in a module table without a metatable is a raw read:
// no Go function, no protected call, nothing allocated. Through __index
// it is found as before (TestMethodThroughIndex).
func TestLookupPlainModule(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("idle", `return { main = function() end }`)
	p := &Process{host: h.Kind.(*Host), env: h.Env, entry: e, spec: e.Spec.(*Spec)}
	p.ctx = &procContext{Context: context.Background(), p: p}
	p.L = newState(p)
	defer p.L.Close()
	main := p.L.NewFunction(func(*lua.LState) int { return 0 })
	mod := p.L.NewTable()
	mod.RawSetString("main", main)
	allocs := testing.AllocsPerRun(100, func() {
		fn, err := p.lookup(mod, "main")
		if err != nil || fn != main {
			t.Fatalf("lookup: %v, %v", fn, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("looking a method up in a plain module allocates %.0f times", allocs)
	}
}

// stateProbeModule lets a test script look at its own Process.
var stateProbeModule = Module{
	Name: "stateprobe",
	Doc:  "Test only: looks at the process's host state.",
	Funcs: []Func{
		{Name: "has_pid_string", Fn: func(L *lua.LState) int {
			p := ProcessOf(L)
			L.Push(lua.LBool(p.more != nil && p.more.selfStr != ""))
			return 1
		}, Doc: "Whether the process has made its PID string."},
	},
}

// A process makes its PID string when process.pid() first asks for it,
// not at its spawn: most processes never do.
func TestPIDStringOnFirstUse(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("pid", `
local probe = require("stateprobe")
return { main = function()
  assert(not probe.has_pid_string(), "made at spawn")
  local a = process.pid()
  assert(probe.has_pid_string())
  assert(process.pid() == a)
  return a
end }`)
	// Run watches the process from before it runs: it ends at once.
	ex := h.Run(e)
	if s, _ := ex.Value.(string); ex.Err != nil || !process.IsPIDString(s) {
		t.Fatalf("exit %v, %v; want its PID", ex.Value, ex.Err)
	}
}
