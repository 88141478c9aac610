package process

import (
	"errors"
	"testing"
	"time"
)

// TestSystemProcessRefusesUntrustedStops: a script's terminate (TerminateFrom)
// cannot end a system process, and neither can a link; the runtime's own
// Terminate can, and so can the parent it was spawned linked to.
func TestSystemProcessRefusesUntrustedStops(t *testing.T) {
	n := newTestNode()
	script := spawnCollector(t, n, SpawnOptions{})
	sys := spawnCollector(t, n, SpawnOptions{System: true})
	plain := spawnCollector(t, n, SpawnOptions{})

	if !n.IsSystem(sys.pid) || n.IsSystem(plain.pid) || n.IsSystem(PID{}) {
		t.Fatalf("IsSystem: sys %v plain %v", n.IsSystem(sys.pid), n.IsSystem(plain.pid))
	}
	for _, from := range []PID{script.pid, {}, sys.pid} {
		err := n.TerminateFrom(from, sys.pid)
		if !errors.Is(err, ErrSystemProcess) {
			t.Fatalf("TerminateFrom(%s): %v, want ErrSystemProcess", from, err)
		}
	}
	if err := n.TerminateFrom(script.pid, plain.pid); err != nil {
		t.Fatalf("terminate an ordinary process: %v", err)
	}
	eventually(t, "the ordinary process to stop", func() bool { return !n.Alive(plain.pid) })

	// A linked process that crashes: the system process gets LINK_DOWN and
	// runs on, even after it was told to stop trapping.
	if err := n.SetTrapLinks(sys.pid, false); err != nil {
		t.Fatal(err)
	}
	crasher := spawnCollector(t, n, SpawnOptions{LinkTo: sys.pid})
	if err := n.Exit(crasher.pid, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	if e := sys.event(t); e.Kind != EventLinkDown || e.From != crasher.pid {
		t.Fatalf("event %v from %s, want LINK_DOWN from %s", e.Kind, e.From, crasher.pid)
	}
	if !n.Alive(sys.pid) {
		t.Fatal("a crashing linked process stopped a system process")
	}

	// The runtime's path still stops it.
	if err := n.Terminate(sys.pid); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the system process to stop", func() bool { return !n.Alive(sys.pid) })
	if n.IsSystem(sys.pid) {
		t.Fatal("IsSystem of a dead process")
	}
}

// TestSystemProcessObeysItsParent: the process a system process was
// spawned linked to owns it, as an OTP supervisor's parent does.
func TestSystemProcessObeysItsParent(t *testing.T) {
	n := newTestNode()
	parent := spawnCollector(t, n, SpawnOptions{})
	other := spawnCollector(t, n, SpawnOptions{})
	sys := spawnCollector(t, n, SpawnOptions{System: true, LinkTo: parent.pid})
	if err := n.TerminateFrom(other.pid, sys.pid); !errors.Is(err, ErrSystemProcess) {
		t.Fatalf("a stranger: %v", err)
	}
	done, exit, ok := n.Done(sys.pid)
	if !ok {
		t.Fatal("no such process")
	}
	if err := n.TerminateFrom(parent.pid, sys.pid); err != nil {
		t.Fatalf("its parent: %v", err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the parent's terminate did not stop it")
	}
	if !errors.Is(exit().Err, ErrShutdown) {
		t.Fatalf("exit %v", exit().Err)
	}
}
