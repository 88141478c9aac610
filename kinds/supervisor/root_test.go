package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

// rootTestKind runs a process that exits abnormally on "crash" and
// normally on "return".
type rootTestKind struct{}

func (rootTestKind) Name() string                 { return "roottest.svc" }
func (rootTestKind) Decode(*registry.Decoder) any { return nil }

type rootTestInstance struct{ pid process.PID }

func (i rootTestInstance) PID() process.PID { return i.pid }

func (rootTestKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		for {
			m, err := p.Receive(context.Background())
			if err != nil {
				return nil, err
			}
			switch m.Topic {
			case "crash":
				return nil, errors.New("crashed on purpose")
			case "return":
				return "done", nil
			}
		}
	}, process.SpawnOptions{MonitorBy: opts.MonitorBy})
	return rootTestInstance{pid}, err
}

func rootSetup(t *testing.T, yaml string) (*runtime.Runtime, *Root) {
	t.Helper()
	return rootSetupLogged(t, yaml, nil)
}

// rootSetupLogged is rootSetup with the root's and the runtime's lines
// written to log (nil: the default logger).
func rootSetupLogged(t *testing.T, yaml string, log *slog.Logger) (*runtime.Runtime, *Root) {
	t.Helper()
	kinds := registry.NewRegistry()
	kinds.Register(rootTestKind{})
	kinds.Register(rootLoopKind{})
	kinds.Register(rootGoneKind{})
	kinds.Register(rootGoneKind{ignore: true})
	kinds.Register(rootLateKind{})
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := (&config.Loader{Kinds: kinds}).Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return rootStart(t, kinds, cfg, log)
}

// rootStart starts cfg of kinds on a runtime of a new node under a root
// supervisor (log: nil for the default logger), and stops both, checking
// for leaks, when the test ends.
func rootStart(t *testing.T, kinds *registry.Registry, cfg *config.Config, log *slog.Logger) (*runtime.Runtime, *Root) {
	t.Helper()
	node := process.NewNode(process.Options{Name: "root-test"})
	rt := runtime.NewRuntime(runtime.RuntimeOptions{Node: node, Kinds: kinds, Logger: log})
	root, err := StartRoot(RootOptions{Node: node, Runtime: rt, Jitter: func() float64 { return 0.5 }, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	rt.SetOwner(root)
	t.Cleanup(func() {
		rt.Stop(context.Background())
		root.Stop(context.Background())
		goleak.VerifyNone(t)
	})
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return rt, root
}

// reloadRoot is a runtime under a root, started from the file path,
// which reload writes and reloads.
type reloadRoot struct {
	t      *testing.T
	rt     *runtime.Runtime
	loader *config.Loader
	path   string
}

// newReloadRoot writes yaml to a file, loads it with kinds (nil:
// rootTestKind's alone) and starts it under a root (rootStart).
func newReloadRoot(t *testing.T, kinds *registry.Registry, yaml string) *reloadRoot {
	t.Helper()
	if kinds == nil {
		kinds = registry.NewRegistry()
		kinds.Register(rootTestKind{})
	}
	a := &reloadRoot{t: t, loader: &config.Loader{Kinds: kinds}, path: filepath.Join(t.TempDir(), "c.yaml")}
	a.write(yaml)
	cfg, err := a.loader.Load(a.path)
	if err != nil {
		t.Fatal(err)
	}
	a.rt, _ = rootStart(t, kinds, cfg, nil)
	return a
}

func (a *reloadRoot) write(yaml string) {
	a.t.Helper()
	if err := os.WriteFile(a.path, []byte(yaml), 0o644); err != nil {
		a.t.Fatal(err)
	}
}

// reload writes yaml and reloads it.
func (a *reloadRoot) reload(yaml string) runtime.ReloadSummary {
	a.t.Helper()
	a.write(yaml)
	_, sum, err := a.rt.Reload(context.Background(), a.loader, a.path)
	if err != nil {
		a.t.Fatal(err)
	}
	return sum
}

func (a *reloadRoot) status(id registry.ID) (runtime.EntryInfo, bool) { return a.rt.Info(id) }

func rootCrash(t *testing.T, rt *runtime.Runtime, id registry.ID, topic string) process.PID {
	t.Helper()
	var inst registry.Instance
	rootWaitFor(t, string(id)+" running", func() bool {
		var ok bool
		inst, ok = rt.Instance(id)
		return ok
	})
	if err := rt.Env().Node.Send(inst.PID(), process.Message{Topic: topic}); err != nil {
		t.Fatal(err)
	}
	return inst.PID()
}

func TestRootRestartsWithBackoff(t *testing.T) {
	rt, _ := rootSetup(t, `namespace: a
entries:
  - name: s
    kind: roottest.svc
    lifecycle:
      auto_start: true
      restart: {initial_delay: 20ms, max_delay: 1s}
  - name: other
    kind: roottest.svc
    lifecycle: {auto_start: true}
`)
	otherBefore, _ := rt.Instance("a:other")
	for round := 1; round <= 3; round++ {
		old := rootCrash(t, rt, "a:s", "crash")
		rootWaitFor(t, "restart", func() bool {
			info, _ := rt.Info("a:s")
			return info.Status == runtime.StatusRunning && info.Instance.PID() != old
		})
		if info, _ := rt.Info("a:s"); info.Restarts != round {
			t.Fatalf("restarts %d, want %d", info.Restarts, round)
		}
	}
	// One entry's failures never touch another (no escalation).
	if otherNow, _ := rt.Instance("a:other"); otherNow.PID() != otherBefore.PID() {
		t.Fatal("a:other was restarted")
	}
}

func TestRootGivesUpAfterMaxAttempts(t *testing.T) {
	rt, _ := rootSetup(t, `namespace: a
entries:
  - name: s
    kind: roottest.svc
    lifecycle:
      auto_start: true
      restart: {initial_delay: 5ms, max_delay: 1s, max_attempts: 2}
`)
	for range 2 {
		old := rootCrash(t, rt, "a:s", "crash")
		rootWaitFor(t, "restart", func() bool {
			info, _ := rt.Info("a:s")
			return info.Status == runtime.StatusRunning && info.Instance.PID() != old
		})
	}
	rootCrash(t, rt, "a:s", "crash")
	rootWaitFor(t, "failed", func() bool {
		info, _ := rt.Info("a:s")
		return info.Status == runtime.StatusFailed
	})
	info, _ := rt.Info("a:s")
	if info.Err == nil || info.Restarts != 2 {
		t.Fatalf("failed entry %+v", info)
	}
	if got := rt.NotReady(); len(got) != 1 || got[0] != "a:s" {
		t.Fatalf("not ready %v", got)
	}
}

// rootLoopKind's instances crash 20ms after they start: a crash loop.
type rootLoopKind struct{}

func (rootLoopKind) Name() string                 { return "roottest.loop" }
func (rootLoopKind) Decode(*registry.Decoder) any { return nil }

func (rootLoopKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		time.Sleep(20 * time.Millisecond)
		return nil, errors.New("crashed again")
	}, process.SpawnOptions{MonitorBy: opts.MonitorBy})
	return rootTestInstance{pid}, err
}

// A service that keeps crashing reaches max_attempts and is marked failed,
// even when each instance outlives a tiny max_delay (which used to count
// as a recovery and reset the attempts for ever); a 0 delay is raised to
// MinRestartDelay instead of spinning; and the crash loop's lines are
// rate-limited.
func TestRootCrashLoopReachesMaxAttempts(t *testing.T) {
	var buf testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	rt, _ := rootSetupLogged(t, `namespace: a
entries:
  - name: s
    kind: roottest.loop
    lifecycle:
      auto_start: true
      restart: {initial_delay: 1ns, max_delay: 1ns, max_attempts: 12}
`, log)
	testutil.EventuallyWithin(t, 30*time.Second, "a:s failed", func() bool {
		info, _ := rt.Info("a:s")
		return info.Status == runtime.StatusFailed
	})
	info, _ := rt.Info("a:s")
	if info.Restarts != 12 || info.Err == nil || !strings.Contains(info.Err.Error(), "gave up after 12 restart attempts: crashed again") {
		t.Fatalf("failed entry: restarts %d, error %v", info.Restarts, info.Err)
	}
	out := buf.String()
	for _, msg := range []string{`msg="restarting entry"`, `msg="entry failed"`, `msg="entry restarted"`} {
		if n := strings.Count(out, msg); n > logging.DefaultBurst {
			t.Errorf("%d lines %s in a crash loop, want at most %d", n, msg, logging.DefaultBurst)
		}
	}
}

func TestRootDelayFloor(t *testing.T) {
	r := &Root{jitter: func() float64 { return 0.5 }}
	for _, p := range []registry.RestartPolicy{
		{InitialDelay: 0, MaxDelay: 0, BackoffFactor: 2},
		{InitialDelay: 1, MaxDelay: 1, BackoffFactor: 1},
	} {
		for n := 1; n < 5; n++ {
			if d := r.backoff(p, n); d < MinRestartDelay {
				t.Fatalf("%+v attempt %d: delay %v, below %v", p, n, d, MinRestartDelay)
			}
		}
	}
}

// The root applies each entry's lifecycle.restart.type: a permanent entry
// is restarted whatever its exit; a transient one only after a failure,
// and a normal return completes it; a temporary one never, failing for
// good on a failure.
func TestRootRestartTypes(t *testing.T) {
	tests := []struct {
		typ, topic string
		want       runtime.Status
		restarts   int
	}{
		{"permanent", "return", runtime.StatusRunning, 1},
		{"permanent", "crash", runtime.StatusRunning, 1},
		{"transient", "return", runtime.StatusCompleted, 0},
		{"transient", "crash", runtime.StatusRunning, 1},
		{"temporary", "return", runtime.StatusCompleted, 0},
		{"temporary", "crash", runtime.StatusFailed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"/"+tt.topic, func(t *testing.T) {
			rt, _ := rootSetup(t, `namespace: a
entries:
  - {name: s, kind: roottest.svc, lifecycle: {auto_start: true, restart: {type: `+tt.typ+`, initial_delay: 5ms}}}
`)
			old := rootCrash(t, rt, "a:s", tt.topic)
			rootWaitFor(t, string(tt.want), func() bool {
				info, _ := rt.Info("a:s")
				return info.Status == tt.want && info.Restarts == tt.restarts && (tt.want != runtime.StatusRunning || info.Instance.PID() != old)
			})
			time.Sleep(50 * time.Millisecond) // ten times the restart delay: nothing more may happen
			info, _ := rt.Info("a:s")
			if info.Status != tt.want || info.Restarts != tt.restarts {
				t.Fatalf("then %+v", info)
			}
			ready := len(rt.NotReady()) == 0
			if ready != (tt.want != runtime.StatusFailed) {
				t.Fatalf("status %s, ready %v", info.Status, ready)
			}
		})
	}
}

// A transient entry stopped on request (process.terminate) is stopped,
// not restarted and not completed.
func TestRootTransientStoppedOnRequest(t *testing.T) {
	rt, _ := rootSetup(t, `namespace: a
entries:
  - {name: s, kind: roottest.svc, lifecycle: {auto_start: true, restart: {type: transient, initial_delay: 5ms}}}
`)
	inst, _ := rt.Instance("a:s")
	if err := rt.Env().Node.Terminate(inst.PID()); err != nil {
		t.Fatal(err)
	}
	rootWaitFor(t, "stopped", func() bool {
		info, _ := rt.Info("a:s")
		return info.Status == runtime.StatusStopped
	})
	time.Sleep(50 * time.Millisecond)
	if info, _ := rt.Info("a:s"); info.Status != runtime.StatusStopped || info.Restarts != 0 {
		t.Fatalf("after a shutdown: %+v", info)
	}
}

// A permanent entry terminated on request is restarted, and that is no
// failure: it logged WRN "entry failed" error=shutdown.
func TestRootPermanentStoppedOnRequestIsNoFailure(t *testing.T) {
	var buf testutil.SyncBuffer
	rt, _ := rootSetupLogged(t, `namespace: a
entries:
  - {name: s, kind: roottest.svc, lifecycle: {auto_start: true, restart: {initial_delay: 5ms}}}
`, slog.New(slog.NewTextHandler(&buf, nil)))
	inst, _ := rt.Instance("a:s")
	if err := rt.Env().Node.Terminate(inst.PID()); err != nil {
		t.Fatal(err)
	}
	rootWaitFor(t, "restarted", func() bool {
		info, _ := rt.Info("a:s")
		return info.Status == runtime.StatusRunning && info.Restarts == 1
	})
	out := buf.String()
	if strings.Contains(out, `msg="entry failed"`) || !strings.Contains(out, `level=INFO msg="entry stopped on request; restarting it"`) {
		t.Fatalf("a requested stop of a permanent entry logged as:\n%s", out)
	}
}

func TestRootDoesNotRestartWhatTheRuntimeStopped(t *testing.T) {
	rt, root := rootSetup(t, `namespace: a
entries:
  - {name: s, kind: roottest.svc, lifecycle: {auto_start: true, restart: {initial_delay: 5ms}}}
`)
	inst, _ := rt.Instance("a:s")
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rt.Env().Node.Alive(inst.PID()) {
		t.Fatal("still alive")
	}
	time.Sleep(50 * time.Millisecond)
	if info, _ := rt.Info("a:s"); info.Status != runtime.StatusStopped {
		t.Fatalf("status %s", info.Status)
	}
	if !rt.Env().Node.Alive(root.PID()) {
		t.Fatal("root died")
	}
}

func TestRootBackoff(t *testing.T) {
	p := registry.RestartPolicy{InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second, BackoffFactor: 2}
	tests := []struct {
		jitter float64
		n      int
		want   time.Duration
	}{
		{0.5, 1, 100 * time.Millisecond},
		{0.5, 2, 200 * time.Millisecond},
		{0.5, 3, 400 * time.Millisecond},
		{0.5, 5, time.Second},
		{0, 1, 80 * time.Millisecond},
		{0.999999, 2, 240 * time.Millisecond},
		// At the cap the spread stays, below max_delay.
		{0, 5, 800 * time.Millisecond},
		{0.75, 5, 900 * time.Millisecond},
		{0.999999, 5, 800 * time.Millisecond},
		{0.25, 40, 900 * time.Millisecond},
		{0.5, 5000, time.Second}, // factor^n overflows to +Inf
	}
	for _, tt := range tests {
		r := &Root{jitter: func() float64 { return tt.jitter }}
		got := r.backoff(p, tt.n)
		if d := got - tt.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("jitter %v attempt %d: %v, want %v", tt.jitter, tt.n, got, tt.want)
		}
	}
}

// Shared helpers (internal/testutil).
var rootWaitFor = testutil.Eventually

// rootQuickKind's first instance waits for "crash"; every later one
// returns normally as soon as its owner has been told of it: a service that
// finishes its work at once, before anyone else could get to monitor it.
type rootQuickKind struct {
	starts  *atomic.Int32
	release chan struct{}
}

func (rootQuickKind) Name() string                 { return "roottest.quick" }
func (rootQuickKind) Decode(*registry.Decoder) any { return nil }

func (k rootQuickKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	first := k.starts.Add(1) == 1
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		if !first {
			<-k.release
			return "done", nil
		}
		m, err := p.Receive(context.Background())
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("crashed on %s", m.Topic)
	}, process.SpawnOptions{MonitorBy: opts.MonitorBy})
	if err != nil {
		return nil, err
	}
	return rootTestInstance{pid}, nil
}

// releasingOwner lets a later rootQuickKind instance return the moment the
// root has been told to watch it.
type releasingOwner struct {
	*Root
	k rootQuickKind
}

func (o releasingOwner) Watch(id registry.ID, inst registry.Instance) {
	o.Root.Watch(id, inst)
	if o.k.starts.Load() > 1 {
		o.k.release <- struct{}{}
	}
}

// A restarted instance that returns normally right away is completed, not
// taken for a failure ("no such process") and restarted until the entry is
// marked failed: the root watches it before it is published, as it does a
// first start.
func TestRootRestartedInstanceReturnsAtOnce(t *testing.T) {
	k := rootQuickKind{starts: &atomic.Int32{}, release: make(chan struct{}, 8)}
	kinds := registry.NewRegistry()
	kinds.Register(k)
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(`namespace: a
entries:
  - {name: s, kind: roottest.quick, lifecycle: {auto_start: true, restart: {type: transient, initial_delay: 5ms, max_attempts: 3}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := (&config.Loader{Kinds: kinds}).Load(p)
	if err != nil {
		t.Fatal(err)
	}
	node := process.NewNode(process.Options{Name: "root-test"})
	rt := runtime.NewRuntime(runtime.RuntimeOptions{Node: node, Kinds: kinds})
	root, err := StartRoot(RootOptions{Node: node, Runtime: rt, Jitter: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	rt.SetOwner(releasingOwner{root, k})
	t.Cleanup(func() {
		close(k.release)
		rt.Stop(context.Background())
		root.Stop(context.Background())
		goleak.VerifyNone(t)
	})
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	rootCrash(t, rt, "a:s", "crash")
	rootWaitFor(t, "completed after one restart", func() bool {
		info, _ := rt.Info("a:s")
		return info.Status == runtime.StatusCompleted && info.Restarts == 1
	})
	time.Sleep(50 * time.Millisecond) // ten times the restart delay: nothing may come back
	if info, _ := rt.Info("a:s"); info.Status != runtime.StatusCompleted || info.Restarts != 1 || k.starts.Load() != 2 {
		t.Fatalf("after a normal return: %+v, %d starts", info, k.starts.Load())
	}
}

// rootTestKindB is rootTestKind under another name, so changing an entry's
// kind between them is a change that restarts it.
type rootTestKindB struct{ rootTestKind }

func (rootTestKindB) Name() string { return "roottest.svcb" }

// A reload that replaces an entry while it waits for a restart gives it a
// fresh attempt budget at once, and the restart still pending for the
// replaced instance is dropped: it cannot reset the count later, in the
// middle of the new instance's failures, and let it past max_attempts.
func TestRootStaleRestartKeepsAttempts(t *testing.T) {
	kinds := registry.NewRegistry()
	kinds.Register(rootTestKind{})
	kinds.Register(rootTestKindB{})
	conf := func(kind string) string {
		return fmt.Sprintf(`namespace: a
entries:
  - name: s
    kind: %s
    lifecycle:
      auto_start: true
      restart: {initial_delay: 300ms, max_delay: 10s, backoff_factor: 1, max_attempts: 2}
`, kind)
	}
	a := newReloadRoot(t, kinds, conf("roottest.svc"))
	rt := a.rt
	// Attempt 1 is pending (300ms) when a reload replaces the entry.
	first := rootCrash(t, rt, "a:s", "crash")
	rootWaitFor(t, "waiting for its restart", func() bool {
		info, _ := rt.Info("a:s")
		return info.Status == runtime.StatusStarting
	})
	// A change of kind restarts the waiting entry at once.
	a.reload(conf("roottest.svcb"))
	prev := rootCrash(t, rt, "a:s", "crash") // attempt 1 of the new budget
	if prev == first {
		t.Fatal("the reload did not replace the instance")
	}
	for attempt := 1; attempt <= 2; attempt++ {
		rootWaitFor(t, fmt.Sprintf("attempt %d", attempt), func() bool {
			info, _ := rt.Info("a:s")
			return info.Status == runtime.StatusRunning && info.Instance.PID() != prev
		})
		if attempt < 2 {
			prev = rootCrash(t, rt, "a:s", "crash")
		}
	}
	rootCrash(t, rt, "a:s", "crash") // past max_attempts: 2
	rootWaitFor(t, "failed", func() bool {
		info, _ := rt.Info("a:s")
		return info.Status == runtime.StatusFailed
	})
}

// rootStartAsync loads yaml and starts it in the background, returning the
// runtime at once and Start's result on a channel.
func rootStartAsync(t *testing.T, yaml string) (*runtime.Runtime, <-chan error) {
	t.Helper()
	kinds := registry.NewRegistry()
	kinds.Register(rootTestKind{})
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := (&config.Loader{Kinds: kinds}).Load(p)
	if err != nil {
		t.Fatal(err)
	}
	node := process.NewNode(process.Options{Name: "root-test"})
	rt := runtime.NewRuntime(runtime.RuntimeOptions{Node: node, Kinds: kinds})
	root, err := StartRoot(RootOptions{Node: node, Runtime: rt, Jitter: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	rt.SetOwner(root)
	t.Cleanup(func() {
		rt.Stop(context.Background())
		root.Stop(context.Background())
		goleak.VerifyNone(t)
	})
	done := make(chan error, 1)
	go func() { done <- rt.Start(context.Background(), cfg) }()
	return rt, done
}

const migrateThenServe = `namespace: a
entries:
  - name: migrate
    kind: roottest.svc
    lifecycle:
      auto_start: true
      restart: {type: transient, initial_delay: 5ms}
  - name: service
    kind: roottest.svc
    lifecycle: {auto_start: true, depends_on: [migrate]}
`

// Run the migrations, then start the service: the service waits, not
// ready, while the transient migrate entry runs (failing once and being
// restarted), and starts once it has completed. Start returns only then.
func TestRootRunMigrationsThenStartService(t *testing.T) {
	rt, started := rootStartAsync(t, migrateThenServe)
	rootWaitFor(t, "migrate running", func() bool { _, ok := rt.Instance("a:migrate"); return ok })
	status := func(id registry.ID) runtime.Status { in, _ := rt.Info(id); return in.Status }
	if s := status("a:service"); s != runtime.StatusStarting {
		t.Fatalf("service %s while migrations run", s)
	}
	if nr := rt.NotReady(); len(nr) != 1 || nr[0] != "a:service" {
		t.Fatalf("not ready %v", nr)
	}
	select {
	case err := <-started:
		t.Fatalf("Start returned (%v) before the migrations completed", err)
	default:
	}
	// A failed migration is restarted (transient); the service keeps waiting.
	old := rootCrash(t, rt, "a:migrate", "crash")
	rootWaitFor(t, "migrate restarted", func() bool {
		inst, ok := rt.Instance("a:migrate")
		return ok && inst.PID() != old
	})
	if s := status("a:service"); s != runtime.StatusStarting {
		t.Fatalf("service %s after a failed migration", s)
	}
	rootCrash(t, rt, "a:migrate", "return")
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start still waiting after the migrations completed")
	}
	if s := status("a:migrate"); s != runtime.StatusCompleted {
		t.Fatalf("migrate %s", s)
	}
	if s := status("a:service"); s != runtime.StatusRunning {
		t.Fatalf("service %s", s)
	}
	if nr := rt.NotReady(); len(nr) != 0 {
		t.Fatalf("not ready %v: a completed entry counts as ready", nr)
	}
}

// A task that fails for good (temporary) fails what waits for it, and
// Start stops everything and fails: a configuration never half-runs.
func TestRootFailedTaskFailsStart(t *testing.T) {
	rt, started := rootStartAsync(t, `namespace: a
entries:
  - {name: other, kind: roottest.svc, lifecycle: {auto_start: true}}
  - {name: migrate, kind: roottest.svc, lifecycle: {auto_start: true, restart: {type: temporary}}}
  - {name: service, kind: roottest.svc, lifecycle: {auto_start: true, depends_on: [migrate]}}
`)
	rootCrash(t, rt, "a:migrate", "crash")
	var err error
	select {
	case err = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("Start still waiting after the task failed")
	}
	if err == nil || !strings.Contains(err.Error(), "start a:service: dependency a:migrate failed") {
		t.Fatalf("start: %v", err)
	}
	for _, id := range []registry.ID{"a:other", "a:service"} {
		if _, ok := rt.Instance(id); ok {
			t.Fatalf("%s still runs after a failed start", id)
		}
	}
}

// What waits for a task waits at most its own start_timeout.
func TestRootTaskWaitTimesOut(t *testing.T) {
	_, started := rootStartAsync(t, `namespace: a
entries:
  - {name: migrate, kind: roottest.svc, lifecycle: {auto_start: true, restart: {type: transient}}}
  - {name: service, kind: roottest.svc, lifecycle: {auto_start: true, depends_on: [migrate], start_timeout: 100ms}}
`)
	select {
	case err := <-started:
		if err == nil || !strings.Contains(err.Error(), "dependency a:migrate did not complete within start_timeout 100ms") {
			t.Fatalf("start: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the service waited past its start_timeout")
	}
}

// A reload that adds a task and its dependent starts the dependent once
// the task completes; a dependent added later next to a completed task
// starts at once; an unchanged completed task is not run again.
func TestReloadTasks(t *testing.T) {
	rt, _ := rootSetup(t, "namespace: a\nentries:\n  - {name: other, kind: roottest.svc, lifecycle: {auto_start: true}}\n")
	kinds := registry.NewRegistry()
	kinds.Register(rootTestKind{})
	dir := t.TempDir()
	l := &config.Loader{Kinds: kinds}
	apply := func(body string) runtime.ReloadSummary {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, sum, err := rt.Reload(context.Background(), l, dir)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	apply(migrateThenServe)
	if in, _ := rt.Info("a:service"); in.Status != runtime.StatusStarting {
		t.Fatalf("service %+v", in)
	}
	rootCrash(t, rt, "a:migrate", "return")
	rootWaitFor(t, "service started after the task", func() bool { _, ok := rt.Instance("a:service"); return ok })
	sum := apply(migrateThenServe + "  - {name: api, kind: roottest.svc, lifecycle: {auto_start: true, depends_on: [migrate]}}\n")
	if _, ok := rt.Instance("a:api"); !ok || len(sum.Added) != 1 {
		t.Fatalf("a dependent of a completed task did not start at once: %+v", sum)
	}
	if in, _ := rt.Info("a:migrate"); in.Status != runtime.StatusCompleted {
		t.Fatalf("the completed task ran again: %s", in.Status)
	}
}

// A start that waits for a task and is no longer wanted (auto_start
// switched off) stops waiting and is a definition again.
func TestReloadDropsAWaitingStart(t *testing.T) {
	rt, _ := rootSetup(t, "namespace: a\nentries:\n  - {name: other, kind: roottest.svc, lifecycle: {auto_start: true}}\n")
	kinds := registry.NewRegistry()
	kinds.Register(rootTestKind{})
	dir := t.TempDir()
	l := &config.Loader{Kinds: kinds}
	apply := func(body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := rt.Reload(context.Background(), l, dir); err != nil {
			t.Fatal(err)
		}
	}
	apply(migrateThenServe)
	if in, _ := rt.Info("a:service"); in.Status != runtime.StatusStarting {
		t.Fatalf("service %+v", in)
	}
	apply(strings.Replace(migrateThenServe, "{auto_start: true, depends_on: [migrate]}", "{depends_on: [migrate]}", 1))
	if in, _ := rt.Info("a:service"); in.Status != runtime.StatusDefined {
		t.Fatalf("service %s after auto_start was switched off", in.Status)
	}
	rootCrash(t, rt, "a:migrate", "return")
	rootWaitFor(t, "migrate completed", func() bool { in, _ := rt.Info("a:migrate"); return in.Status == runtime.StatusCompleted })
	if in, _ := rt.Info("a:service"); in.Status != runtime.StatusDefined {
		t.Fatalf("service %s: started though no longer wanted", in.Status)
	}
}

// rootGoneKind's instance has exited by the time Start returns, as a
// script's may that fails at once. Spawned with opts.MonitorBy unless
// ignore is set (a kind that breaks registry.StartOptions' contract).
type rootGoneKind struct{ ignore bool }

func (k rootGoneKind) Name() string {
	if k.ignore {
		return "roottest.gone_unmonitored"
	}
	return "roottest.gone"
}
func (rootGoneKind) Decode(*registry.Decoder) any { return nil }

func (k rootGoneKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	so := process.SpawnOptions{MonitorBy: opts.MonitorBy}
	if k.ignore {
		so.MonitorBy = process.PID{}
	}
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		return nil, errors.New("crashed at once")
	}, so)
	if err != nil {
		return nil, err
	}
	if done, _, ok := env.Node.Done(pid); ok {
		<-done
	}
	return rootTestInstance{pid}, nil
}

// An instance that is gone before its start returns is seen with its own
// exit, since the root monitors it from its spawn, and counts toward
// max_attempts; one of a kind that ignored StartOptions.MonitorBy is
// reported as gone before its monitor, not as a bare "no such process".
func TestRootInstanceGoneBeforeItsStartReturns(t *testing.T) {
	for _, tc := range []struct {
		kind, want string
	}{
		{"roottest.gone", "gave up after 2 restart attempts: crashed at once"},
		{"roottest.gone_unmonitored", "gave up after 2 restart attempts: its process"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			rt, _ := rootSetup(t, "namespace: a\nentries:\n  - {name: s, kind: "+tc.kind+", lifecycle: {auto_start: true, restart: {initial_delay: 1ms, max_attempts: 2}}}\n")
			rootWaitFor(t, "a:s failed", func() bool {
				info, _ := rt.Info("a:s")
				return info.Status == runtime.StatusFailed
			})
			info, _ := rt.Info("a:s")
			msg := info.Err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q, want it to contain %q", msg, tc.want)
			}
			if gone := strings.Contains(msg, "exited as soon as it started, before the root supervisor could monitor it"); gone != (tc.kind == "roottest.gone_unmonitored") {
				t.Fatalf("error %q", msg)
			}
		})
	}
}

// rootLateKind ignores StartOptions.MonitorBy, and its instance lives: the
// root monitors it late, says so, and still restarts it when it crashes.
type rootLateKind struct{ rootTestKind }

func (rootLateKind) Name() string { return "roottest.late" }

func (k rootLateKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, _ registry.StartOptions) (registry.Instance, error) {
	return k.rootTestKind.Start(ctx, env, e, registry.StartOptions{})
}

func TestRootMonitorsLateWhatItsKindLeftUnmonitored(t *testing.T) {
	var buf testutil.SyncBuffer
	rt, _ := rootSetupLogged(t, "namespace: a\nentries:\n  - {name: s, kind: roottest.late, lifecycle: {auto_start: true, restart: {initial_delay: 1ms}}}\n", slog.New(slog.NewTextHandler(&buf, nil)))
	old := rootCrash(t, rt, "a:s", "crash")
	rootWaitFor(t, "a:s restarted", func() bool {
		inst, ok := rt.Instance("a:s")
		return ok && inst.PID() != old
	})
	if !strings.Contains(buf.String(), "did not have the root monitor its instance from its spawn") {
		t.Fatalf("no line about the late monitor in:\n%s", buf.String())
	}
}
