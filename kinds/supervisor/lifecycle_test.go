package supervisor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// When the caller's deadline passes while a child ignores its shutdown
// (shutdown: infinity), the whole tree is killed.
func TestStopDeadlineKillsTree(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	f.addWorker("t:stubborn")
	f.addSup("t:inner", &Spec{Children: []ChildSpec{{ID: "deep", Process: "t:stubborn", Shutdown: Infinity}}})
	s := f.start("t:sup", &Spec{Children: []ChildSpec{{ID: "a", Process: "t:w"}, {ID: "inner", Process: "t:inner"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stop: %v", err)
	}
	waitFor(t, "every process gone", func() bool { return f.env.Node.Count() == 0 })
}

// A supervisor whose linked parent dies abnormally stops its children.
func TestParentExitStopsTree(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	release := make(chan struct{})
	parent, err := f.env.Node.SpawnFunc(func(h *process.Proc) (any, error) {
		<-release
		return nil, errors.New("parent crashed")
	}, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), f.env, "t:sup", &Spec{Children: kids("a", "b")}, process.SpawnOptions{LinkTo: parent})
	if err != nil {
		t.Fatal(err)
	}
	f.events()
	close(release)
	<-s.Done()
	var le *process.LinkError
	if !errors.As(s.Err(), &le) || le.From != parent {
		t.Fatalf("exit %v", s.Err())
	}
	if got := f.events(); len(got) != 2 || got[0] != "stop:b" || got[1] != "stop:a" {
		t.Fatalf("log %v", got)
	}
}

// A supervisor cannot end up below itself.
func TestCycleRefused(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	f.addSup("t:a", &Spec{Children: []ChildSpec{{ID: "b", Process: "t:b"}}})
	f.addSup("t:b", &Spec{Children: []ChildSpec{{ID: "a", Process: "t:a"}}})
	_, err := Start(context.Background(), f.env, "t:a", &Spec{Children: []ChildSpec{{ID: "b", Process: "t:b"}}}, process.SpawnOptions{})
	if !errors.Is(err, ErrCycle) {
		t.Fatalf("err %v", err)
	}
	waitFor(t, "no process left", func() bool { return f.env.Node.Count() == 0 })
}

func TestPartitionUpdate(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:p", &Spec{Kind: KindPartition, Partitions: 2, MaxRestarts: 1, Worker: ChildSpec{Process: "t:w"}})
	update := func(spec *Spec) bool {
		t.Helper()
		ok, err := s.Update(context.Background(), &registry.Entry{ID: "t:p", Kind: KindPartition, Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	pids := s.WhichChildren()
	if !update(&Spec{Kind: KindPartition, Partitions: 2, MaxRestarts: 7, Worker: ChildSpec{Process: "t:w"}}) {
		t.Fatal("max_restarts not applied in place")
	}
	if s.Tree().MaxRestarts != 7 || s.WhichChildren()[0].PID != pids[0].PID {
		t.Fatal("in-place update touched the workers")
	}
	if update(&Spec{Kind: KindPartition, Partitions: 3, Worker: ChildSpec{Process: "t:w"}}) {
		t.Fatal("a new partition count was applied in place")
	}
	if update(&Spec{Kind: KindPartition, Partitions: 2, Worker: ChildSpec{Process: "t:w", Restart: Transient}}) {
		t.Fatal("a new worker template was applied in place")
	}
}

// Two supervisors on one metrics registry share the collectors.
func TestMetricsShared(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	a := f.start("t:a", &Spec{MaxRestarts: 5, Children: kids("x")})
	b := f.start("t:b", &Spec{MaxRestarts: 5, Children: kids("x")})
	for _, s := range []*Supervisor{a, b} {
		old := infoOf(t, s, "x").PID
		send(t, f.env.Node, old, "crash")
		waitRunning(t, s, "x", old)
	}
	n := 0
	mfs, err := f.env.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "supervisor_restarts_total" {
			for _, m := range mf.GetMetric() {
				n += int(m.GetCounter().GetValue())
			}
		}
	}
	if n != 2 {
		t.Fatalf("supervisor_restarts_total sums to %d, want 2", n)
	}
}
