package lua

import (
	"context"
	"testing"
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
