package pool

import (
	"errors"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// TestRuntimeProcessesRefuseScripts: a pool, a router.group and a pg scope
// are the runtime's processes. A script (any process that is not their
// parent) can neither terminate them nor take them down by linking to them
// and crashing; they keep serving.
func TestRuntimeProcessesRefuseScripts(t *testing.T) {
	h := newGroupHarness(t)
	h.routee("app:worker", func() process.Behavior { return &worker{} })
	p := h.start(t, &Spec{Size: 2})
	g := h.startGroup(t, &GroupSpec{Group: "indexers"})
	for name, pid := range map[string]process.PID{"pool": p.PID(), "group": g.PID(), "scope": h.scope.PID()} {
		script, err := h.node.SpawnFunc(func(pr *process.Proc) (any, error) {
			<-pr.Context().Done()
			return nil, errors.New("script raised")
		}, process.SpawnOptions{LinkTo: pid})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.node.TerminateFrom(script, pid); !errors.Is(err, process.ErrSystemProcess) {
			t.Fatalf("%s: terminate from a script: %v, want ErrSystemProcess", name, err)
		}
		done, _, _ := h.node.Done(script)
		h.node.Terminate(script) // it exits abnormally, linked to pid
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the script did not exit")
		}
		// The link signal was given before the script's Done closed: a
		// process it stops notices within microseconds, so a quiet
		// quarter second means it was not stopped.
		if died, _, ok := h.node.Done(pid); !ok {
			t.Fatalf("%s died of a linked script's crash", name)
		} else {
			select {
			case <-died:
				t.Fatalf("%s died of a linked script's crash", name)
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	if _, _, err := h.node.Ask(p.PID(), process.Message{Topic: "work", Payload: 1}, 5*time.Second); err != nil {
		t.Fatalf("the pool no longer serves: %v", err)
	}
}
