package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/proctor-run/proctor/value"
)

// TestMaxProcesses: a spawn past the node's limit fails with a limit
// error (a script spawning in a loop took the node's memory); a process
// that exits frees its place.
func TestMaxProcesses(t *testing.T) {
	n := NewNode(Options{Name: "test", Logger: slog.New(slog.DiscardHandler), MaxProcesses: 3})
	if n.MaxProcesses() != 3 {
		t.Fatalf("MaxProcesses = %d", n.MaxProcesses())
	}
	var pids []PID
	for i := 0; i < 3; i++ {
		pid, err := n.Spawn(echo, SpawnOptions{})
		if err != nil {
			t.Fatalf("spawn %d: %v", i, err)
		}
		pids = append(pids, pid)
	}
	for name, spawn := range map[string]func() (PID, error){
		"behavior": func() (PID, error) { return n.Spawn(echo, SpawnOptions{}) },
		"func":     func() (PID, error) { return n.SpawnFunc(func(*Proc) (any, error) { return nil, nil }, SpawnOptions{}) },
		"named":    func() (PID, error) { return n.Spawn(echo, SpawnOptions{Name: "over"}) },
	} {
		_, err := spawn()
		if !errors.Is(err, ErrTooManyProcesses) || value.KindOf(err) != value.KindLimit {
			t.Fatalf("%s: spawn past the limit: %v", name, err)
		}
	}
	if n.Count() != 3 {
		t.Fatalf("Count = %d after refused spawns", n.Count())
	}
	if _, ok := n.Whereis("over"); ok {
		t.Fatal("a refused spawn registered its name")
	}
	if _, err := n.Stop(context.Background(), pids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Spawn(echo, SpawnOptions{}); err != nil {
		t.Fatalf("spawn after an exit: %v", err)
	}
	for _, opts := range []Options{{}, {MaxProcesses: -1}} {
		if got, want := NewNode(opts).MaxProcesses(), map[int]int{0: DefaultMaxProcesses, -1: 0}[opts.MaxProcesses]; got != want {
			t.Fatalf("MaxProcesses(%d) = %d, want %d", opts.MaxProcesses, got, want)
		}
	}
}

// TestProcessLimits: a process spawned with Limits may not hold more
// links, monitors or names than they allow (a script doing any of them in
// a loop grew the node's memory without bound), and the events it leaves
// unread past MaxEvents are dropped as dead letters.
func TestProcessLimits(t *testing.T) {
	n, box := newLetterNode()
	lim := Limits{MaxEvents: 3, MaxLinks: 2, MaxMonitors: 2, MaxNames: 2}
	p := parked(t, n, SpawnOptions{Limits: lim})
	others := make([]PID, 3)
	for i := range others {
		others[i] = parked(t, n, SpawnOptions{TrapLinks: true})
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrProcessLimit) || value.KindOf(err) != value.KindLimit {
			t.Fatalf("%s past the limit: %v", what, err)
		}
	}
	for _, op := range []struct {
		name string
		do   func(i int) error
	}{
		{"monitor", func(i int) error { return n.Monitor(p, others[i]) }},
		{"link", func(i int) error { return n.Link(p, others[i]) }},
		{"register", func(i int) error { return n.Register(fmt.Sprintf("name%d", i), p) }},
	} {
		for i := 0; i < 2; i++ {
			if err := op.do(i); err != nil {
				t.Fatalf("%s %d: %v", op.name, i, err)
			}
		}
		if err := op.do(1); err != nil { // again: nothing new held
			t.Fatalf("%s again: %v", op.name, err)
		}
		refused(op.name, op.do(2))
	}
	// Unread events: the first MaxEvents stay queued, the rest are dead
	// letters.
	q := parked(t, n, SpawnOptions{Limits: Limits{MaxEvents: 3}})
	dead, _ := n.Spawn(echo, SpawnOptions{})
	if _, err := n.Stop(context.Background(), dead); err != nil {
		t.Fatal(err)
	}
	box.take()
	for i := 0; i < 10; i++ {
		if err := n.Monitor(q, dead); err != nil {
			t.Fatal(err)
		}
	}
	if got := queued(n, q); got != 3 {
		t.Fatalf("%d events queued, want 3", got)
	}
	letters := box.take()
	if len(letters) != 7 || letters[0].Reason != DeadEventOverflow || letters[0].Topic != "EXIT" || letters[0].From != dead || letters[0].To != q.String() {
		t.Fatalf("dead letters %+v", letters)
	}
	// Without limits nothing is refused.
	free := parked(t, n, SpawnOptions{})
	for i := 0; i < 3; i++ {
		if err := n.Monitor(free, others[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpentMonitorsAreReleased: a monitor whose target exited is spent
// (its EXIT given), so it no longer counts against MaxMonitors: a process
// that watches one job after another never runs out (it did after
// MaxMonitors jobs).
func TestSpentMonitorsAreReleased(t *testing.T) {
	n, _ := newLetterNode()
	w := parked(t, n, SpawnOptions{Limits: Limits{MaxMonitors: 2}})
	for i := 0; i < 10; i++ {
		job := parked(t, n, SpawnOptions{})
		if err := n.Monitor(w, job); err != nil {
			t.Fatalf("monitor of job %d: %v", i, err)
		}
		if _, err := n.Stop(context.Background(), job); err != nil {
			t.Fatal(err)
		}
	}
	if got := queued(n, w); got != 10 {
		t.Fatalf("%d EXIT events, want 10", got)
	}
}

// TestHugeTimeoutIsFarDeadline: a timeout as large as a Duration holds (a
// script's math.huge) overflowed into a deadline already past, so the
// callee saw the ask as over before it arrived.
func TestHugeTimeoutIsFarDeadline(t *testing.T) {
	for _, timeout := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, 1 << 62, time.Hour} {
		c := NewCall()
		m := c.MessageWithin(Message{Topic: "x"}, timeout)
		d, ok := m.Deadline()
		if !ok || !d.After(time.Now().Add(time.Hour-time.Second)) {
			t.Errorf("timeout %d: deadline %v, %v", timeout, d, ok)
		}
		c.Abandon(ErrTimeout)
	}
}
