package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeOwner struct {
	mu      sync.Mutex
	watched []registry.ID
}

// PID is zero: no instance is monitored from its spawn.
func (o *fakeOwner) PID() process.PID { return process.PID{} }

func (o *fakeOwner) Watch(id registry.ID, inst registry.Instance) {
	o.mu.Lock()
	o.watched = append(o.watched, id)
	o.mu.Unlock()
}

type fakeHealth struct {
	mu     sync.Mutex
	checks map[string]func() error
}

func (h *fakeHealth) SetCheck(name string, c func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checks[name] = c
}

func (h *fakeHealth) RemoveCheck(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.checks, name)
}

func (h *fakeHealth) has(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.checks[name]
	return ok
}

func newTestRuntime(t *testing.T) (*Runtime, *config.Config, *kindtest.SvcKind, *fakeHealth) {
	t.Helper()
	kinds, svc := kindtest.Kinds()
	cfg, err := (&config.Loader{Kinds: kinds}).Load("../config/testdata/good")
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHealth{checks: map[string]func() error{}}
	rt := NewRuntime(RuntimeOptions{Node: process.NewNode(process.Options{Name: "t"}), Kinds: kinds, Health: h, StopTimeout: time.Second})
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return rt, cfg, svc, h
}

func statusOf(rt *Runtime, id registry.ID) Status {
	info, ok := rt.Info(id)
	if !ok {
		return ""
	}
	return info.Status
}

func TestRuntimeStartStopOrder(t *testing.T) {
	rt, cfg, svc, _ := newTestRuntime(t)
	svc.Order = make(chan registry.ID, 10)
	svc.Stopped = make(chan registry.ID, 10)
	owner := &fakeOwner{}
	rt.SetOwner(owner)
	if got := rt.NotReady(); len(got) != 0 {
		t.Fatalf("not ready before start: %v", got)
	}
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	close(svc.Order)
	var order []registry.ID
	for id := range svc.Order {
		order = append(order, id)
	}
	// app:db has no auto_start but app:api needs it running; app:def is a
	// definition and only has to exist.
	if fmt.Sprint(order) != "[app:db app:api other:worker]" {
		t.Fatalf("start order %v", order)
	}
	if fmt.Sprint(owner.watched) != fmt.Sprint(order) {
		t.Fatalf("owner watched %v", owner.watched)
	}
	want := map[registry.ID]Status{"app:db": StatusRunning, "app:api": StatusRunning, "other:worker": StatusRunning, "app:def": StatusDefined}
	for id, st := range want {
		if got := statusOf(rt, id); got != st {
			t.Errorf("%s: %s, want %s", id, got, st)
		}
	}
	if len(rt.NotReady()) != 0 {
		t.Fatalf("not ready: %v", rt.NotReady())
	}
	if _, ok := rt.Instance("app:def"); ok {
		t.Fatal("a definition has an instance")
	}
	inst, ok := rt.Instance("app:api")
	if !ok || !rt.Env().Node.Alive(inst.PID()) {
		t.Fatal("app:api has no live instance")
	}
	if pid, ok := rt.Env().Node.Whereis("app:api"); !ok || pid != inst.PID() {
		t.Fatal("app:api not registered under its ID")
	}
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(svc.Stopped)
	var stopped []registry.ID
	for id := range svc.Stopped {
		stopped = append(stopped, id)
	}
	if fmt.Sprint(stopped) != "[other:worker app:api app:db]" {
		t.Fatalf("stop order %v", stopped)
	}
	if statusOf(rt, "app:api") != StatusStopped || statusOf(rt, "app:def") != StatusDefined {
		t.Fatal("statuses after stop", rt.Entries())
	}
	if err := rt.Start(context.Background(), cfg); !errors.Is(err, ErrRuntimeStopped) {
		t.Fatalf("start after stop: %v", err)
	}
}

func TestRuntimeStartFailureUndoes(t *testing.T) {
	rt, cfg, svc, h := newTestRuntime(t)
	// app:db starts, app:api fails: app:db must be stopped again.
	svc.Order = make(chan registry.ID, 10)
	k := &failAfter{SvcKind: svc, ok: 1}
	kinds := registry.NewRegistry()
	kinds.Register(k)
	kinds.Register(kindtest.DefKind{})
	rt.opts.Kinds = kinds
	err := rt.Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "start app:api: refusing to start") {
		t.Fatalf("err %v", err)
	}
	if statusOf(rt, "app:db") != StatusStopped || statusOf(rt, "app:api") != StatusFailed || statusOf(rt, "other:worker") != StatusDefined {
		t.Fatalf("statuses %+v", rt.Entries())
	}
	if !h.has("entry.app:api") {
		t.Fatal("no failing health check for app:api")
	}
	if got := fmt.Sprint(rt.NotReady()); got != "[app:api other:worker]" {
		t.Fatalf("not ready %s", got)
	}
}

// failAfter lets ok Starts through, then fails.
type failAfter struct {
	*kindtest.SvcKind
	ok int
}

func (f *failAfter) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	if f.ok == 0 {
		return nil, errors.New("refusing to start")
	}
	f.ok--
	return f.SvcKind.Start(ctx, env, e, opts)
}

func TestRuntimeOwnerProtocol(t *testing.T) {
	rt, cfg, svc, h := newTestRuntime(t)
	ctx := context.Background()
	if err := rt.Start(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	node := rt.Env().Node
	inst, _ := rt.Instance("other:worker")
	old := inst.PID()
	done, exit, _ := node.Done(old)
	node.Send(old, process.Message{Topic: "crash"})
	<-done
	if _, err := rt.Exited(ctx, "other:worker", process.PID{Node: "t", ID: 999}, exit()); !errors.Is(err, ErrNotCurrent) {
		t.Fatalf("stale pid: %v", err)
	}
	restart, err := rt.Exited(ctx, "other:worker", old, exit())
	if err != nil || !restart {
		t.Fatalf("exited: %v %v", restart, err)
	}
	if info, _ := rt.Info("other:worker"); info.Status != StatusStarting || info.Err == nil {
		t.Fatalf("after failure %+v", info)
	}
	svc.FailStarts.Store(1)
	if _, err := rt.Restart(ctx, "other:worker", old); err == nil {
		t.Fatal("restart should have failed")
	}
	nw, err := rt.Restart(ctx, "other:worker", old)
	if err != nil || nw.PID() == old {
		t.Fatalf("restart: %v", err)
	}
	if info, _ := rt.Info("other:worker"); info.Status != StatusRunning || info.Restarts != 2 {
		t.Fatalf("after restart %+v", info)
	}
	if _, err := rt.Restart(ctx, "other:worker", old); !errors.Is(err, ErrNotCurrent) {
		t.Fatalf("second restart of the same instance: %v", err)
	}
	// A permanent service that returns normally is restarted too.
	done, exit, _ = node.Done(nw.PID())
	node.Send(nw.PID(), process.Message{Topic: "return"})
	<-done
	if restart, err := rt.Exited(ctx, "other:worker", nw.PID(), exit()); err != nil || !restart {
		t.Fatalf("normal exit: %v %v", restart, err)
	}
	if statusOf(rt, "other:worker") != StatusStarting {
		t.Fatal("not starting again after a normal return")
	}
	// Giving up marks the entry failed, with a failing health check.
	inst, _ = rt.Instance("app:api")
	done, exit, _ = node.Done(inst.PID())
	node.Send(inst.PID(), process.Message{Topic: "crash"})
	<-done
	rt.Exited(ctx, "app:api", inst.PID(), exit())
	if err := rt.Fail(ctx, "app:api", inst.PID(), errors.New("gave up")); err != nil {
		t.Fatal(err)
	}
	if statusOf(rt, "app:api") != StatusFailed || !h.has("entry.app:api") {
		t.Fatal("app:api not failed")
	}
	if got := fmt.Sprint(rt.NotReady()); got != "[app:api other:worker]" {
		t.Fatalf("not ready %s", got)
	}
	if svc.StartCount("other:worker") != 2 {
		t.Fatalf("worker started %d times", svc.StartCount("other:worker"))
	}
}

func TestRuntimeLookupSpawn(t *testing.T) {
	rt, cfg, _, _ := newTestRuntime(t)
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Spawn("app:nope", registry.SpawnOptions{}); !errors.Is(err, registry.ErrNoEntry) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := rt.Spawn("app:def", registry.SpawnOptions{}); !errors.Is(err, ErrNotTemplate) {
		t.Fatalf("not a template: %v", err)
	}
	pid, err := rt.Spawn("app:db", registry.SpawnOptions{Args: []any{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := rt.Entry("app:db"); !ok || e.Kind != "test.svc" {
		t.Fatal("Entry lookup")
	}
	done, exit, ok := rt.Env().Node.Done(pid)
	if !ok {
		t.Fatal("spawned process is gone")
	}
	rt.Env().Node.Send(pid, process.Message{Topic: "go"})
	<-done
	if fmt.Sprint(exit().Value) != "[x]" {
		t.Fatalf("spawned with %v", exit().Value)
	}
}

func TestRuntimeStopKillsPastDeadline(t *testing.T) {
	rt, node, inst := oneService(t, stubbornKind{}, 50*time.Millisecond)
	start := time.Now()
	rt.Stop(context.Background())
	if node.Alive(inst.PID()) {
		t.Fatal("stubborn process still alive")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("stop took %v", el)
	}
	inst.(*stubbornInstance).release()
}

// oneService runs a configuration of one auto-started entry a:s of kind k
// with the given stop timeout.
func oneService(t *testing.T, k registry.Kind, stopTimeout time.Duration) (*Runtime, *process.Node, registry.Instance) {
	t.Helper()
	kinds := registry.NewRegistry()
	kinds.Register(k)
	dir := t.TempDir()
	os.WriteFile(dir+"/c.yaml", []byte("namespace: a\nentries:\n  - {name: s, kind: "+k.Name()+", lifecycle: {auto_start: true}}\n"), 0o644)
	cfg, err := (&config.Loader{Kinds: kinds}).Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	node := process.NewNode(process.Options{Name: "t"})
	rt := NewRuntime(RuntimeOptions{Node: node, Kinds: kinds, StopTimeout: stopTimeout})
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	inst, ok := rt.Instance("a:s")
	if !ok {
		t.Fatal("a:s is not running")
	}
	return rt, node, inst
}

// stubbornKind's process ignores its stop request until released.
type stubbornKind struct{}

func (stubbornKind) Name() string                 { return "test.stubborn" }
func (stubbornKind) Decode(*registry.Decoder) any { return nil }

type stubbornInstance struct {
	pid  process.PID
	gate chan struct{}
}

func (s *stubbornInstance) PID() process.PID { return s.pid }
func (s *stubbornInstance) release()         { close(s.gate) }

func (stubbornKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	gate := make(chan struct{})
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		<-gate
		return nil, nil
	}, process.SpawnOptions{})
	return &stubbornInstance{pid: pid, gate: gate}, err
}

// slowInstance stops on request, but only after a while, and says how
// long its stop may take (a ShutdownTimer).
type slowInstance struct {
	pid     process.PID
	timeout time.Duration
}

func (s *slowInstance) PID() process.PID               { return s.pid }
func (s *slowInstance) ShutdownTimeout() time.Duration { return s.timeout }

type slowKind struct{ timeout time.Duration }

func (slowKind) Name() string                 { return "test.slow" }
func (slowKind) Decode(*registry.Decoder) any { return nil }

func (k slowKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		<-p.Context().Done()
		time.Sleep(150 * time.Millisecond) // a graceful stop that takes its time
		return "clean", nil
	}, process.SpawnOptions{})
	return &slowInstance{pid: pid, timeout: k.timeout}, err
}

func TestRuntimeStopHonoursShutdownTimer(t *testing.T) {
	tests := []struct {
		name       string
		timeout    time.Duration
		wantKilled bool
	}{
		{"longer than StopTimeout", 5 * time.Second, false},
		{"no limit", 0, false},
		{"shorter than the stop", 20 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// StopTimeout alone would kill the slow stop.
			rt, node, inst := oneService(t, slowKind{timeout: tt.timeout}, 50*time.Millisecond)
			done, exit, ok := node.Done(inst.PID())
			if !ok {
				t.Fatal("instance gone before stop")
			}
			rt.Stop(context.Background())
			<-done
			killed := errors.Is(exit().Err, process.ErrKilled)
			if killed != tt.wantKilled {
				t.Fatalf("exit %+v; killed = %v, want %v", exit(), killed, tt.wantKilled)
			}
		})
	}
}
