package supervisor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/runtime"
)

// stranger spawns a process that is no supervisor's child, as a script is
// to the root, and returns it with a function that crashes it.
func stranger(t *testing.T, n *process.Node) (process.PID, func()) {
	t.Helper()
	pid, err := n.SpawnFunc(func(p *process.Proc) (any, error) {
		<-p.Context().Done()
		return nil, nil
	}, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Kill(pid) })
	return pid, func() {
		done, _, ok := n.Done(pid)
		if !ok {
			t.Fatal("the stranger is gone already")
		}
		n.Exit(pid, errors.New("script raised"))
		<-done
	}
}

// TestRootSurvivesLinkAndTerminate is the attack of issue 10: the root's
// PID is easy to guess; a script that terminates it, or links to it and
// raises, must not take it down, and crashed entries are still restarted.
func TestRootSurvivesLinkAndTerminate(t *testing.T) {
	rt, root := rootSetup(t, `namespace: a
entries:
  - name: s
    kind: roottest.svc
    lifecycle:
      auto_start: true
      restart: {initial_delay: 10ms}
`)
	node := rt.Env().Node
	script, crash := stranger(t, node)
	if err := node.TerminateFrom(script, root.PID()); !errors.Is(err, process.ErrSystemProcess) {
		t.Fatalf("terminate the root: %v, want ErrSystemProcess", err)
	}
	if err := node.Link(script, root.PID()); err != nil {
		t.Fatal(err)
	}
	crash()
	// The LINK_DOWN is handled on the root's goroutine; a restart that
	// follows proves the root got past it alive.
	old := rootCrash(t, rt, "a:s", "crash")
	rootWaitFor(t, "a:s restarted", func() bool {
		info, _ := rt.Info("a:s")
		return info.Status == runtime.StatusRunning && info.Instance.PID() != old
	})
	if !root.Alive() {
		t.Fatalf("the root died: %v", root.Exit())
	}
	select {
	case <-root.Done():
		t.Fatal("Done closed while the root runs")
	default:
	}
}

// TestRootDoneReportsDeath: whatever ends the root, Done says so.
func TestRootDoneReportsDeath(t *testing.T) {
	_, root := rootSetup(t, "namespace: a\nentries: []\n")
	root.node.Kill(root.PID())
	select {
	case <-root.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the root was killed")
	}
	if !errors.Is(root.Exit().Err, process.ErrKilled) || root.Alive() {
		t.Fatalf("exit %v alive %v", root.Exit(), root.Alive())
	}
}

// TestSupervisorObeysOnlyItsParent: a stranger can neither terminate a
// supervisor nor take it down through a link; its parent can stop it.
func TestSupervisorObeysOnlyItsParent(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	n := f.env.Node
	parent, _ := stranger(t, n)
	s, err := Start(context.Background(), f.env, "t:sup", &Spec{Kind: KindStatic, Strategy: OneForOne, Children: kids("a")},
		process.SpawnOptions{LinkTo: parent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	script, crash := stranger(t, n)
	if err := n.TerminateFrom(script, s.PID()); !errors.Is(err, process.ErrSystemProcess) {
		t.Fatalf("a stranger's terminate: %v", err)
	}
	n.Link(script, s.PID())
	crash()
	ping(t, n, infoOf(t, s, "a").PID) // the tree still serves
	if s.Status() != StatusRunning {
		t.Fatalf("status %s after a stranger crashed", s.Status())
	}
	if err := n.TerminateFrom(parent, s.PID()); err != nil {
		t.Fatalf("the parent's terminate: %v", err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the parent could not stop its supervisor")
	}
}
