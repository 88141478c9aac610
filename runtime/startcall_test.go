package runtime

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// gateKind's Start spawns its process (registered under the entry's ID
// when named), then waits for gate, ignoring its context, as a Lua init
// that blocks does; it fails if its process dies meanwhile.
type gateKind struct {
	gate  chan struct{}
	named bool
	pids  chan process.PID
}

func (gateKind) Name() string                 { return "test.gate" }
func (gateKind) Decode(*registry.Decoder) any { return nil }

func (k gateKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, _ registry.StartOptions) (registry.Instance, error) {
	so := process.SpawnOptions{}
	if k.named {
		so.Name = string(e.ID)
	}
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		_, err := p.Receive(context.Background())
		return nil, err
	}, so)
	if err != nil {
		return nil, err
	}
	k.pids <- pid
	done, _, _ := env.Node.Done(pid)
	select {
	case <-k.gate:
		return gateInstance{pid: pid}, nil
	case <-done:
		return nil, errors.New("killed while starting")
	}
}

type gateInstance struct{ pid process.PID }

func (s gateInstance) PID() process.PID { return s.pid }

// A reload whose start blocks (until a start timeout of an hour) does not
// hold up Stop: the start is abandoned, its process killed, and Stop
// returns at once; an instance that comes after all is stopped.
func TestStopAbandonsSlowStart(t *testing.T) {
	for _, named := range []bool{true, false} {
		t.Run(map[bool]string{true: "registered", false: "anonymous"}[named], func(t *testing.T) {
			k := gateKind{gate: make(chan struct{}), named: named, pids: make(chan process.PID, 1)}
			kinds := registry.NewRegistry()
			kinds.Register(k)
			dir := t.TempDir()
			c := filepath.Join(dir, "c.yaml")
			os.WriteFile(c, []byte("namespace: a\nentries: []\n"), 0o644)
			l := &config.Loader{Kinds: kinds}
			cfg, err := l.Load(c)
			if err != nil {
				t.Fatal(err)
			}
			node := process.NewNode(process.Options{Name: "t"})
			rt := NewRuntime(RuntimeOptions{Node: node, Kinds: kinds, StopTimeout: 200 * time.Millisecond})
			if err := rt.Start(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(c, []byte("namespace: a\nentries:\n  - {name: slow, kind: test.gate, lifecycle: {auto_start: true, start_timeout: 1h}}\n"), 0o644)
			applied := make(chan ReloadSummary, 1)
			go func() {
				_, sum, _ := rt.Reload(context.Background(), l, c)
				applied <- sum
			}()
			pid := <-k.pids
			// The reload under way shows.
			if p, ok := rt.ReloadInProgress(); !ok || time.Since(p.Since) > time.Minute {
				t.Fatalf("reload in progress: %v %v", p, ok)
			}
			if v := testutil.MetricValue(t, rt.opts.Metrics, "runner_reload_in_progress", nil); v != 1 {
				t.Fatalf("runner_reload_in_progress %v during a reload", v)
			}
			start := time.Now()
			if err := rt.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("Stop took %v during a slow start", d)
			}
			if sum := <-applied; len(sum.Failed) != 1 || sum.Failed[0] != "a:slow" {
				t.Fatalf("reload summary %+v", sum)
			}
			if named && node.Alive(pid) {
				t.Fatal("the starting process was not killed")
			}
			// The start completes after all: its instance is stopped.
			close(k.gate)
			testutil.Eventually(t, "the late instance stopped", func() bool { return !node.Alive(pid) })
			rt.orphans.Wait()
			if _, ok := rt.ReloadInProgress(); ok {
				t.Fatal("a reload still in progress after it ended")
			}
			if v := testutil.MetricValue(t, rt.opts.Metrics, "runner_reload_in_progress", nil); v != 0 {
				t.Fatalf("runner_reload_in_progress %v after the reload", v)
			}
		})
	}
}

// Reloads asked for while one waits for a slow start are not lost and do
// not pile up: they coalesce into one that runs when it ends, and the
// watcher says so.
func TestWatchQueuesReloadsDuringASlowOne(t *testing.T) {
	k := gateKind{gate: make(chan struct{}), pids: make(chan process.PID, 4)}
	kinds := registry.NewRegistry()
	kinds.Register(k)
	kinds.Register(kindtest.NewSvcKind())
	c := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(c, []byte("namespace: a\nentries: []\n"), 0o644)
	l := &config.Loader{Kinds: kinds}
	cfg, err := l.Load(c)
	if err != nil {
		t.Fatal(err)
	}
	var logs testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	rt := NewRuntime(RuntimeOptions{Node: process.NewNode(process.Options{Name: "t"}), Kinds: kinds, Logger: log})
	defer rt.Stop(context.Background())
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	w, err := Watch(WatchOptions{Runtime: rt, Loader: l, Paths: []string{c}, Config: cfg, Logger: log, Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	os.WriteFile(c, []byte("namespace: a\nentries:\n  - {name: slow, kind: test.gate, lifecycle: {auto_start: true, start_timeout: 1h}}\n"), 0o644)
	w.Trigger()
	<-k.pids // the first reload waits for the start
	os.WriteFile(c, []byte("namespace: a\nentries:\n  - {name: slow, kind: test.gate, lifecycle: {auto_start: true, start_timeout: 1h}}\n  - {name: next, kind: test.svc, lifecycle: {auto_start: true}}\n"), 0o644)
	for range 3 {
		w.Trigger()
	}
	testutil.Eventually(t, "the later reload queued", func() bool {
		return strings.Contains(logs.String(), "a reload is under way; this one follows it")
	})
	close(k.gate)
	// Its entry runs before its "reload applied" line is written.
	testutil.Eventually(t, "the queued reload applied", func() bool {
		return statusOf(rt, "a:next") == StatusRunning && strings.Count(logs.String(), "reload applied") >= 2
	})
	w.Close()
	if n := strings.Count(logs.String(), "reload applied"); n != 2 {
		t.Fatalf("%d reloads applied, want 2 (the slow one and one for the rest):\n%s", n, logs.String())
	}
}

// typedNilKind's Start waits for its context, then fails returning a typed
// nil beside the error, as a kind whose constructor returns (*T)(nil), err
// does. Its instance type dereferences itself to say how long it needs.
type typedNilKind struct{ started chan struct{} }

type typedNilInstance struct{ timeout time.Duration }

func (i *typedNilInstance) PID() process.PID               { return process.PID{} }
func (i *typedNilInstance) ShutdownTimeout() time.Duration { return i.timeout }

func (typedNilKind) Name() string                 { return "test.typednil" }
func (typedNilKind) Decode(*registry.Decoder) any { return nil }

func (k typedNilKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	close(k.started)
	<-ctx.Done()
	var none *typedNilInstance
	return none, ctx.Err()
}

// A start abandoned (a stop signal during start-up) whose Start then
// fails has no instance to stop. A typed nil beside the error was taken
// for one, and stopping it crashed the node: TestSIGINTAtAnyPointOfStartUp
// found it, a supervisor entry SIGINTed 10 ms into start-up.
func TestAbandonedStartThatFailsStopsNothing(t *testing.T) {
	k := typedNilKind{started: make(chan struct{})}
	kinds := registry.NewRegistry()
	kinds.Register(k)
	c := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(c, []byte("namespace: a\nentries:\n  - {name: s, kind: test.typednil, lifecycle: {auto_start: true}}\n"), 0o644)
	cfg, err := (&config.Loader{Kinds: kinds}).Load(c)
	if err != nil {
		t.Fatal(err)
	}
	rt := NewRuntime(RuntimeOptions{Node: process.NewNode(process.Options{Name: "t"}), Kinds: kinds, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-k.started
		cancel()
	}()
	if err := rt.Start(ctx, cfg); err == nil {
		t.Fatal("a start abandoned by its context did not fail")
	}
	// Start returned with its context; the loop may still be abandoning
	// the start. Stop runs on the loop after it, then the orphan, which
	// must not panic on the typed nil, is waited for.
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	rt.orphans.Wait()
}
