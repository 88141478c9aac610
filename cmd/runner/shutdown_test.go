package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// stuckKind's process ignores its stop request until released, as a
// service wedged in a long call would.
type stuckKind struct{ gate chan struct{} }

func (stuckKind) Name() string                 { return "test.stuck" }
func (stuckKind) Decode(*registry.Decoder) any { return nil }

type stuckInstance struct{ pid process.PID }

func (s stuckInstance) PID() process.PID { return s.pid }

func (k stuckKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry) (registry.Instance, error) {
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		<-k.gate
		return nil, nil
	}, process.SpawnOptions{})
	return stuckInstance{pid}, err
}

func TestSecondSignalForcesExit(t *testing.T) {
	k := stuckKind{gate: make(chan struct{})}
	kinds := registry.NewRegistry()
	kinds.Register(k)
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("namespace: a\nentries:\n  - {name: s, kind: test.stuck, lifecycle: {auto_start: true}}\n"), 0o644)
	cfg, err := (&registry.Loader{Kinds: kinds}).Load(p)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	node := process.NewNode(process.Options{Name: "t", Logger: log})
	rt := registry.NewRuntime(registry.RuntimeOptions{Node: node, Kinds: kinds, Logger: log, StopTimeout: 20 * time.Second})
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	a := &app{log: log, node: node, rt: rt}
	sigs := make(chan os.Signal, 1)
	forced := make(chan struct{})
	done := make(chan struct{})
	go func() {
		a.shutdownWatching(sigs, func() { close(forced) })
		close(done)
	}()
	// The first signal started the shutdown (the caller consumed it); the
	// second one, while the stuck entry holds the shutdown up, forces exit.
	sigs <- syscall.SIGTERM
	select {
	case <-forced:
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not force exit")
	}
	close(k.gate)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("shutdown did not finish once the entry let go")
	}
}
