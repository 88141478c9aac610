package runtime

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

func TestLifecycleFields(t *testing.T) {
	el := newEnvLoader(t)
	cfg, err := el.load(`namespace: app
entries:
  - name: a
    kind: test.svc
    lifecycle:
      start_timeout: 2m
      stop_timeout: 250ms
      restart: {type: transient}
  - {name: b, kind: test.svc}
`)
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Entries["app:a"].Lifecycle, cfg.Entries["app:b"].Lifecycle
	if a.StartTimeout != 2*time.Minute || a.StopTimeout != 250*time.Millisecond || a.Restart.Type != registry.RestartTransient {
		t.Fatalf("a %+v", a)
	}
	if b.StartTimeout != 0 || b.StopTimeout != 0 || b.Restart.Type != registry.RestartPermanent {
		t.Fatalf("b %+v", b)
	}
	var env *registry.Env
	if env.StartTimeout(cfg.Entries["app:a"]) != 2*time.Minute || env.StartTimeout(cfg.Entries["app:b"]) != registry.DefaultStartTimeout ||
		env.StopTimeout(cfg.Entries["app:b"]) != registry.DefaultStopTimeout {
		t.Fatal("Env timeouts")
	}
	_, err = el.load(`namespace: app
entries:
  - name: a
    kind: test.svc
    lifecycle:
      start_timeout: 0s
      stop_timeout: -1s
      restart: {type: sometimes}
  - name: b
    kind: test.svc
    lifecycle: {start_timeout: 25h, stop_timeout: soon}
`)
	want := []string{
		`c.yaml:6:22: app:a: lifecycle.start_timeout: must be a positive duration, got 0s`,
		`c.yaml:7:21: app:a: lifecycle.stop_timeout: must be a positive duration, got -1s`,
		`c.yaml:8:23: app:a: lifecycle.restart.type: unknown value "sometimes"; one of permanent, transient, temporary`,
		`c.yaml:11:32: app:b: lifecycle.start_timeout: must be at most 24h0m0s, got 25h0m0s`,
		`c.yaml:11:51: app:b: lifecycle.stop_timeout: must be a duration such as 250ms or 5s, got "soon"`,
	}
	if err == nil {
		t.Fatal("loaded")
	}
	got := err.Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != len(want) {
		t.Errorf("%d errors, want %d:\n%s", n, len(want), got)
	}
}

// hangKind starts only when its context ends (a Start that hangs), and its
// instances ignore requests to stop until the test ends.
type hangKind struct {
	release chan struct{}
	starts  atomic.Int32
}

func (k *hangKind) Name() string { return "test.hang" }
func (k *hangKind) Decode(d *registry.Decoder) any {
	d.Int("size", 0)
	return d.Enum("mode", "hang", "hang", "stubborn")
}

func (k *hangKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	k.starts.Add(1)
	if e.Spec == "hang" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		<-k.release
		return nil, nil
	}, process.SpawnOptions{MonitorBy: opts.MonitorBy})
	return kindtest.NewInstance(pid), err
}

// lifecycle.start_timeout and stop_timeout replace the runtime's defaults
// at start-up, at shutdown and on reload.
func TestLifecycleTimeoutsHonoured(t *testing.T) {
	k := &hangKind{release: make(chan struct{})}
	defer close(k.release)
	kinds, _ := kindtest.Kinds()
	kinds.Register(k)
	el := newEnvLoader(t)
	el.l.Kinds = kinds
	rt := NewRuntime(RuntimeOptions{Node: process.NewNode(process.Options{Name: "t"}), Kinds: kinds, StartTimeout: time.Minute, StopTimeout: time.Minute})
	defer rt.Stop(context.Background())

	cfg, err := el.load("namespace: a\nentries:\n  - {name: h, kind: test.hang, lifecycle: {auto_start: true, start_timeout: 50ms}}\n")
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := rt.Start(context.Background(), cfg); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("start: %v", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("start gave up after %v, not the entry's 50ms", took)
	}

	body := "namespace: a\nentries:\n  - {name: s, kind: test.hang, mode: stubborn, lifecycle: {auto_start: true, stop_timeout: 50ms}}\n"
	cfg, err = el.load(body)
	if err != nil {
		t.Fatal(err)
	}
	rt2 := NewRuntime(RuntimeOptions{Node: process.NewNode(process.Options{Name: "t2"}), Kinds: kinds, StartTimeout: time.Minute, StopTimeout: time.Minute})
	if err := rt2.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	// A reload that restarts it stops the old instance within 50ms too.
	cfg2, err := el.load(strings.Replace(body, "mode: stubborn,", "mode: stubborn, size: 2,", 1))
	if err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	sum, err := rt2.Apply(context.Background(), cfg2)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 10*time.Second || k.starts.Load() != 3 || len(sum.Restarted) != 1 {
		t.Fatalf("reload restart took %v (%d starts, %+v)", took, k.starts.Load(), sum)
	}
	began = time.Now()
	if err := rt2.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("stop took %v, not the entry's 50ms", took)
	}
}

// Reload status: runner_reload_total has every result from the start, the
// last attempt's success and time are gauges, and the history keeps the
// last N attempts, oldest first, with the errors of a rejected one.
func TestReloadStatus(t *testing.T) {
	kinds, _ := kindtest.Kinds()
	reg := prometheus.NewRegistry()
	rt := NewRuntime(RuntimeOptions{Node: process.NewNode(process.Options{Name: "t"}), Kinds: kinds, Metrics: reg, ReloadHistory: 3})
	defer rt.Stop(context.Background())
	for _, m := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"runner_reload_total", map[string]string{"result": ReloadApplied}, 0},
		{"runner_reload_total", map[string]string{"result": ReloadRejected}, 0},
		{"runner_reload_last_success", nil, 1},
		{"runner_reload_last_timestamp_seconds", nil, 0},
	} {
		if v, ok := testutil.MetricSeries(t, reg, m.name, m.labels); !ok || v != m.want {
			t.Fatalf("%s%v = %v (present %v) before any reload, want %v", m.name, m.labels, v, ok, m.want)
		}
	}
	if h := rt.ReloadHistory(); len(h) != 0 {
		t.Fatalf("history before any reload: %v", h)
	}
	if _, ok := rt.LastReload(); ok {
		t.Fatal("a last reload before any")
	}
	el := newEnvLoader(t)
	el.l.Kinds = kinds
	reload := func(body string) error {
		t.Helper()
		if _, err := el.load(body); err != nil {
			_, _, rerr := rt.Reload(context.Background(), el.l, el.dir)
			return rerr
		}
		_, _, err := rt.Reload(context.Background(), el.l, el.dir)
		return err
	}
	good := "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {auto_start: true}}\n"
	if err := reload(good); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := reload("namespace: a\nentries:\n  - {name: x, kind: test.svc, sise: 1}\n"); err == nil {
		t.Fatal("accepted")
	}
	last, ok := rt.LastReload()
	if !ok || last.Result != ReloadRejected || len(last.Errors) != 1 || last.Time.Before(before) ||
		!strings.HasSuffix(last.Errors[0], `c.yaml:3:31: a:x: sise: unknown field (did you mean "size"?)`) {
		t.Fatalf("last %+v", last)
	}
	if v, _ := testutil.MetricSeries(t, reg, "runner_reload_last_success", nil); v != 0 {
		t.Fatalf("last_success %v after a rejection", v)
	}
	if v, _ := testutil.MetricSeries(t, reg, "runner_reload_last_timestamp_seconds", nil); v < float64(before.Unix()) {
		t.Fatalf("timestamp %v", v)
	}
	for range 3 {
		if err := reload(good); err != nil {
			t.Fatal(err)
		}
	}
	h := rt.ReloadHistory()
	if v, _ := testutil.MetricSeries(t, reg, "runner_reload_last_success", nil); len(h) != 3 || h[0].Result != ReloadApplied || h[2].Unchanged != 1 || v != 1 {
		t.Fatalf("history %+v", h)
	}
	if !h[0].Time.Before(h[2].Time) && !h[0].Time.Equal(h[2].Time) {
		t.Fatal("history not oldest first")
	}
	h[0].Result = "mutated"
	if rt.ReloadHistory()[0].Result != ReloadApplied {
		t.Fatal("ReloadHistory shares its slice with the runtime")
	}
	if v := counterValue(rt.reloads, ReloadApplied); v != 4 {
		t.Fatalf("applied %v", v)
	}
}

// Processes a script spawned (unmanaged) keep their code across a reload
// that changes their entry, and are counted: per entry, as a metric, in
// the reload's summary and history, and in one warning line per reload.
func TestOutdatedProcesses(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": "namespace: a\nentries:\n  - {name: w, kind: test.svc, size: 1}\n"})
	plain, err := r.rt.Spawn("a:w", registry.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	managed, err := r.rt.Spawn("a:w", registry.SpawnOptions{Managed: true})
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := r.rt.Info("a:w"); in.Outdated != 0 {
		t.Fatalf("outdated %d before any change", in.Outdated)
	}
	warnings := func() int { return strings.Count(r.logs.String(), "reload left processes on old code") }
	r.write("c.yaml", "namespace: a\nentries:\n  - {name: w, kind: test.svc, size: 2}\n")
	sum := r.apply()
	if sum.Outdated != 1 || sum.OutdatedBy["a:w"] != 1 || warnings() != 1 {
		t.Fatalf("summary %+v, %d warnings", sum, warnings())
	}
	if in, _ := r.rt.Info("a:w"); in.Outdated != 1 {
		t.Fatalf("Info outdated %d", in.Outdated)
	}
	if h := r.rt.ReloadHistory(); h[len(h)-1].Outdated != 1 {
		t.Fatalf("history %+v", h)
	}
	if !strings.Contains(r.logs.String(), `"entries":"a:w=1"`) {
		t.Fatalf("warning line: %s", r.logs.String())
	}
	// The watcher's quiet look again, which changes nothing, does not
	// warn of them again: the reload that left them did.
	if sum, err := r.rt.applyConfig(context.Background(), r.rt.Config(), true); err != nil || sum.Outdated != 1 || warnings() != 1 {
		t.Fatalf("a quiet apply: %+v, %v, %d warnings", sum, err, warnings())
	}
	if v, ok := testutil.MetricSeries(t, r.rt.opts.Metrics, "runner_outdated_processes", map[string]string{"entry": "a:w"}); !ok || v != 1 {
		t.Fatalf("runner_outdated_processes{entry=a:w} %v (present %v)", v, ok)
	}
	// A process spawned now runs the definition in force.
	fresh, err := r.rt.Spawn("a:w", registry.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.rt.Env().Node.Kill(fresh)
	if in, _ := r.rt.Info("a:w"); in.Outdated != 1 {
		t.Fatalf("outdated %d after a spawn on the new definition", in.Outdated)
	}
	// Once the old process exits it is no longer counted, and a reload
	// that leaves none behind warns no more.
	done, _, _ := r.rt.Env().Node.Done(plain)
	r.rt.Env().Node.Send(plain, process.Message{Topic: "go"})
	<-done
	r.rt.Env().Node.Send(managed, process.Message{Topic: "go"})
	if in, _ := r.rt.Info("a:w"); in.Outdated != 0 {
		t.Fatalf("outdated %d after the old process exited", in.Outdated)
	}
	r.write("c.yaml", "namespace: a\nentries:\n  - {name: w, kind: test.svc, size: 3}\n")
	if sum := r.apply(); sum.Outdated != 1 || warnings() != 2 {
		// The process spawned on size 2 is now the outdated one.
		t.Fatalf("summary %+v, %d warnings", sum, warnings())
	}
}

// spawnIndex sweeps dead processes as it grows, so a script spawning
// short-lived processes in a loop does not grow it without bound.
func TestSpawnIndexSweeps(t *testing.T) {
	node := process.NewNode(process.Options{Name: "t"})
	var x spawnIndex
	for i := 0; i < 10*minSweep; i++ {
		pid, err := node.SpawnFunc(func(*process.Proc) (any, error) { return nil, nil }, process.SpawnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		done, _, ok := node.Done(pid)
		if ok {
			<-done
		}
		x.add(node, "a:w", pid, "d1")
	}
	if x.n > 2*minSweep {
		t.Fatalf("%d dead processes kept", x.n)
	}
}

// refreshKind's instances count the Refresh calls they get; so does a
// tree only the directory knows (a nested supervisor, say).
type refreshKind struct{ calls *atomic.Int32 }

type refreshInstance struct {
	*kindtest.SvcInstance
	calls *atomic.Int32
}

func (k refreshKind) Name() string                   { return "test.refresh" }
func (k refreshKind) Decode(d *registry.Decoder) any { return d.Int("size", 0) }

func (k refreshKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		<-p.Context().Done()
		return nil, nil
	}, process.SpawnOptions{MonitorBy: opts.MonitorBy})
	return &refreshInstance{SvcInstance: kindtest.NewInstance(pid), calls: k.calls}, err
}

func (r *refreshInstance) Refresh(context.Context) error { r.calls.Add(1); return nil }

// After a reload that changed a definition the runtime refreshes every
// running Refresher, entries' instances and the directory's alike, once
// each; a reload that changed nothing refreshes nothing.
func TestReloadRefreshes(t *testing.T) {
	var calls atomic.Int32
	kinds, _ := kindtest.Kinds()
	kinds.Register(refreshKind{calls: &calls})
	el := newEnvLoader(t)
	el.l.Kinds = kinds
	node := process.NewNode(process.Options{Name: "t"})
	rt := NewRuntime(RuntimeOptions{Node: node, Kinds: kinds})
	defer rt.Stop(context.Background())
	body := "namespace: a\nentries:\n  - {name: r, kind: test.refresh, lifecycle: {auto_start: true}}\n  - {name: w, kind: test.svc, size: 1}\n"
	cfg, err := el.load(body)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	inst, _ := rt.Instance("a:r")
	rt.Env().Instances.Add(inst) // the entry's instance: refreshed once, not twice
	pid, _ := node.SpawnFunc(func(p *process.Proc) (any, error) { <-p.Context().Done(); return nil, nil }, process.SpawnOptions{})
	defer node.Kill(pid)
	nested := &refreshInstance{SvcInstance: kindtest.NewInstance(pid), calls: &calls}
	rt.Env().Instances.Add(nested)
	reload := func(b string) {
		t.Helper()
		if _, err := el.load(b); err != nil {
			t.Fatal(err)
		}
		if _, _, err := rt.Reload(context.Background(), el.l, el.dir); err != nil {
			t.Fatal(err)
		}
	}
	reload(body)
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d refreshes after a reload that changed nothing", n)
	}
	reload(strings.Replace(body, "size: 1", "size: 2", 1))
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d refreshes, want one for the entry's instance and one for the nested one", n)
	}
}

// BenchmarkSpawnTracking is what Runtime.Spawn adds to a script's spawn to
// remember the process for the outdated count: one index insert, and a
// share of the sweeps that drop exited processes (here every one has).
func BenchmarkSpawnTracking(b *testing.B) {
	node := process.NewNode(process.Options{Name: "t"})
	pids := make([]process.PID, 4096)
	for i := range pids {
		pid, err := node.SpawnFunc(func(*process.Proc) (any, error) { return nil, nil }, process.SpawnOptions{})
		if err != nil {
			b.Fatal(err)
		}
		pids[i] = pid
	}
	var x spawnIndex
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := pids[i%len(pids)]
		p.ID += uint64(i / len(pids) * len(pids)) // a new PID each time, none of them alive
		x.add(node, "a:w", p, "d1")
	}
}
