package process

import (
	"context"
	"errors"
	"log/slog"
	"testing"

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
