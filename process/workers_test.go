package process

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
)

// spawnWait spawns fn and waits until its process has exited.
func spawnWait(t *testing.T, n *Node, fn ProcFunc) {
	t.Helper()
	pid, err := n.SpawnFunc(fn, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done, _, ok := n.Done(pid)
	if !ok {
		return
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit")
	}
}

// Runs that come one after the other go to the worker the last one left
// parked: no goroutine is started for each.
func TestRunsReuseAParkedWorker(t *testing.T) {
	n := NewNode(Options{Name: "t"})
	seen := map[string]bool{} // goroutineID (settle_test.go): never reused
	reused := 0
	for range 20 {
		var id string
		spawnWait(t, n, func(*Proc) (any, error) { id = goroutineID(); return nil, nil })
		if seen[id] {
			reused++
		}
		seen[id] = true
		// The worker parks after the process's teardown, which Done
		// does not wait for.
		testutil.Eventually(t, "a parked worker", func() bool {
			workers.mu.Lock()
			defer workers.mu.Unlock()
			return len(workers.idle) > 0
		})
	}
	if reused == 0 {
		t.Fatalf("20 runs one after the other ran on %d goroutines, none twice", len(seen))
	}
}

// A run is never queued behind workers that do not come back: each of
// many processes that block keeps its worker, and a process spawned after
// them still runs at once, as on a goroutine of its own.
func TestRunNotQueuedBehindBlockedWorkers(t *testing.T) {
	n := NewNode(Options{Name: "t"})
	release := make(chan struct{})
	defer close(release)
	const blockers = 100
	started := make(chan struct{}, blockers)
	for range blockers {
		if _, err := n.SpawnFunc(func(*Proc) (any, error) {
			started <- struct{}{}
			<-release
			return nil, nil
		}, SpawnOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for range blockers {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("processes spawned while others blocked did not run")
		}
	}
	ran := make(chan struct{})
	if _, err := n.SpawnFunc(func(*Proc) (any, error) { close(ran); return nil, nil }, SpawnOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("a process spawned while every worker blocked did not run")
	}
}

// Parked workers end on their own once nothing runs: a program that has
// stopped its processes keeps no goroutine of the pool.
func TestIdleWorkersEnd(t *testing.T) {
	n := NewNode(Options{Name: "t"})
	before := runtime.NumGoroutine()
	release := make(chan struct{})
	const procs = 32
	for range procs {
		if _, err := n.SpawnFunc(func(*Proc) (any, error) { <-release; return nil, nil }, SpawnOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	testutil.Eventually(t, "the processes to exit", func() bool { return n.Count() == 0 })
	testutil.Eventually(t, "the workers to park", func() bool {
		workers.mu.Lock()
		defer workers.mu.Unlock()
		return len(workers.idle) >= procs/2
	})
	testutil.Eventually(t, "the parked workers to end", func() bool {
		workers.mu.Lock()
		idle := len(workers.idle)
		workers.mu.Unlock()
		return idle == 0 && runtime.NumGoroutine() <= before
	})
}

// A ProcFunc that calls runtime.Goexit ends its process, with an error
// that says so, as a panic does: it stayed in the process table for good
// (Done never closed), and the runs after it still start.
func TestGoexitEndsTheProcess(t *testing.T) {
	n := NewNode(Options{Name: "t"})
	pid, err := n.SpawnFunc(func(*Proc) (any, error) { runtime.Goexit(); return nil, nil }, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done, exit, ok := n.Done(pid)
	if ok {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("a process whose function called runtime.Goexit never exited (%d processes)", n.Count())
		}
		if e := exit(); e.Err == nil || !strings.Contains(e.Err.Error(), "runtime.Goexit") {
			t.Fatalf("exit %+v, want an error naming runtime.Goexit", e)
		}
	}
	testutil.Eventually(t, "the process table to empty", func() bool { return n.Count() == 0 })
	spawnWait(t, n, func(*Proc) (any, error) { return nil, nil })
}
