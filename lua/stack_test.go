package lua

import (
	"context"
	"runtime/debug"
	"testing"
	"unsafe"
)

// A process's goroutine grows its stack once, at its start: building its
// state and running a script then fit, and the stack is not copied again
// in the middle of that work. The stack is seen to move by the address of
// a local variable, which a copy changes.
func TestStateFitsTheGrownStack(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("idle", `return { main = function(x) local t = { x = x } return t.x end }`)
	host := h.Kind.(*Host)
	// A collection may shrink a stack, which moves it too.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, grow := range []bool{false, true} {
		moved := make(chan bool)
		go func() {
			if grow {
				growStack()
			}
			var here byte
			at := uintptr(unsafe.Pointer(&here))
			p := &Process{host: host, env: h.Env, entry: e, spec: e.Spec.(*Spec)}
			p.ctx = &procContext{Context: context.Background(), p: p}
			p.L = newState(p)
			_, v, err := p.run([]any{1.0})
			p.L.Close()
			if err != nil || v != 1.0 {
				t.Errorf("run: %v, %v", v, err)
			}
			moved <- uintptr(unsafe.Pointer(&here)) != at
		}()
		m := <-moved
		if grow && m {
			t.Fatal("the stack grew while a state was built and run, after growStack")
		}
		if !grow && !m {
			// The runtime's starting size (adaptive) already held it.
			t.Log("without growStack the stack did not move either")
		}
	}
}
