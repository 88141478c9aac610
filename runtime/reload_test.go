package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// reloadEnv is a runtime over files in a temporary directory.
type reloadEnv struct {
	t      *testing.T
	dir    string
	rt     *Runtime
	loader *config.Loader
	logs   *syncBuffer
}

func newReloadEnv(t *testing.T, files map[string]string) *reloadEnv {
	t.Helper()
	kinds, _ := kindtest.Kinds()
	return newReloadEnvOf(t, kinds, files)
}

// newReloadEnvOf is newReloadEnv with kinds.
func newReloadEnvOf(t *testing.T, kinds *registry.Registry, files map[string]string) *reloadEnv {
	t.Helper()
	r := &reloadEnv{t: t, dir: t.TempDir(), loader: &config.Loader{Kinds: kinds}, logs: &syncBuffer{}}
	for name, body := range files {
		r.write(name, body)
	}
	log := slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.rt = NewRuntime(RuntimeOptions{Node: process.NewNode(process.Options{Name: "t"}), Kinds: kinds, Logger: log, StopTimeout: time.Second})
	t.Cleanup(func() { r.rt.Stop(context.Background()) })
	cfg, err := r.loader.Load(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *reloadEnv) write(name, body string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *reloadEnv) apply() ReloadSummary {
	r.t.Helper()
	_, sum, err := r.rt.Reload(context.Background(), r.loader, r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	return sum
}

func (r *reloadEnv) pid(id registry.ID) process.PID {
	in, ok := r.rt.Info(id)
	if !ok || in.Instance == nil || in.Status != StatusRunning {
		return process.PID{}
	}
	return in.Instance.PID()
}

func (r *reloadEnv) applied() float64  { return counterValue(r.rt.reloads, "applied") }
func (r *reloadEnv) rejected() float64 { return counterValue(r.rt.reloads, "rejected") }

func counterValue(c *prometheus.CounterVec, label string) float64 {
	var m dto.Metric
	if err := c.WithLabelValues(label).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func TestApplyDiff(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": `namespace: a
entries:
  - {name: keep, kind: test.svc, lifecycle: {auto_start: true}}
  - {name: change, kind: test.svc, size: 1, lifecycle: {auto_start: true}}
  - {name: gone, kind: test.svc, lifecycle: {auto_start: true}}
  - {name: upd, kind: test.upd, size: 1, lifecycle: {auto_start: true}}
  - {name: peerer, kind: test.svc, peer: change, lifecycle: {auto_start: true}}
  - {name: dependent, kind: test.svc, lifecycle: {auto_start: true, depends_on: [change]}}
`})
	before := map[registry.ID]process.PID{}
	for _, id := range []registry.ID{"a:keep", "a:change", "a:gone", "a:upd", "a:peerer", "a:dependent"} {
		if before[id] = r.pid(id); before[id].IsZero() {
			t.Fatalf("%s not running", id)
		}
	}
	r.write("c.yaml", `namespace: a
entries:
  # layout and meta changes are not changes
  - name: keep
    kind: test.svc
    meta: {note: "moved"}
    lifecycle: {auto_start: true}
  - {name: change, kind: test.svc, size: 2, lifecycle: {auto_start: true}}
  - {name: upd, kind: test.upd, size: 5, lifecycle: {auto_start: true}}
  - {name: peerer, kind: test.svc, peer: change, lifecycle: {auto_start: true}}
  - {name: dependent, kind: test.svc, lifecycle: {auto_start: true, depends_on: [change]}}
  - {name: fresh, kind: test.svc, lifecycle: {auto_start: true}}
`)
	sum := r.apply()
	want := ReloadSummary{
		Added: []registry.ID{"a:fresh"}, Updated: []registry.ID{"a:change", "a:upd"}, Restarted: []registry.ID{"a:change", "a:peerer"},
		Removed: []registry.ID{"a:gone"}, Unchanged: []registry.ID{"a:dependent", "a:keep"},
	}
	if fmt.Sprint(sum) != fmt.Sprint(want) || fmt.Sprintf("%v", sum.Restarted) != fmt.Sprintf("%v", want.Restarted) {
		t.Fatalf("summary\n got  %+v\n want %+v", sum, want)
	}
	if sum.String() != "added=1 updated=2 removed=1 unchanged=2 restarted=2" {
		t.Fatalf("summary line %q", sum.String())
	}
	for _, id := range []registry.ID{"a:keep", "a:upd", "a:dependent"} {
		if r.pid(id) != before[id] {
			t.Errorf("%s was touched", id)
		}
	}
	for _, id := range []registry.ID{"a:change", "a:peerer"} {
		if p := r.pid(id); p.IsZero() || p == before[id] {
			t.Errorf("%s was not restarted", id)
		}
	}
	if r.rt.Env().Node.Alive(before["a:gone"]) {
		t.Error("a:gone still runs")
	}
	if _, ok := r.rt.Info("a:gone"); ok {
		t.Error("a:gone still listed")
	}
	if r.pid("a:fresh").IsZero() {
		t.Error("a:fresh not running")
	}
	inst, _ := r.rt.Instance("a:upd")
	if inst.(*kindtest.UpdInstance).Size.Load() != 5 {
		t.Error("a:upd did not get its new size")
	}
	if e, _ := r.rt.Entry("a:keep"); e.Meta["note"] != "moved" {
		t.Error("unchanged entry does not carry its new declaration")
	}
	if r.applied() != 1 {
		t.Errorf("applied %v", r.applied())
	}

	// An Updater that declines restarts the entry.
	r.write("c.yaml", strings.Replace(readFile(t, filepath.Join(r.dir, "c.yaml")), "size: 5,", "size: 5, mode: restart,", 1))
	updBefore := r.pid("a:upd")
	sum = r.apply()
	if fmt.Sprint(sum.Restarted) != "[a:upd]" || r.pid("a:upd") == updBefore || r.pid("a:upd").IsZero() {
		t.Fatalf("declined update: %+v", sum)
	}
}

func readFile(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestApplyDefinitionAndLifecycle(t *testing.T) {
	r := newReloadEnv(t, map[string]string{
		"c.yaml": `namespace: a
entries:
  - {name: def, kind: test.def, size: 1}
  - {name: user, kind: test.svc, routee: def, source: "file://w.lua", lifecycle: {auto_start: true}}
  - {name: toggle, kind: test.svc, lifecycle: {auto_start: true}}
  - {name: later, kind: test.svc}
`,
		"w.lua": "return 1",
	})
	user := r.pid("a:user")
	// A changed definition changes its users.
	r.write("c.yaml", strings.Replace(readFile(t, filepath.Join(r.dir, "c.yaml")), "size: 1", "size: 2", 1))
	sum := r.apply()
	if fmt.Sprint(sum.Updated) != "[a:def a:user]" || r.pid("a:user") == user {
		t.Fatalf("definition change: %+v", sum)
	}
	// A changed source changes its entry.
	user = r.pid("a:user")
	r.write("w.lua", "return 2")
	if sum = r.apply(); fmt.Sprint(sum.Restarted) != "[a:user]" || r.pid("a:user") == user {
		t.Fatalf("source change: %+v", sum)
	}
	// auto_start off stops; on starts.
	body := readFile(t, filepath.Join(r.dir, "c.yaml"))
	body = strings.Replace(body, "{name: toggle, kind: test.svc, lifecycle: {auto_start: true}}", "{name: toggle, kind: test.svc}", 1)
	body = strings.Replace(body, "{name: later, kind: test.svc}", "{name: later, kind: test.svc, lifecycle: {auto_start: true}}", 1)
	r.write("c.yaml", body)
	r.apply()
	if st := statusOf(r.rt, "a:toggle"); st != StatusDefined {
		t.Fatalf("toggle %s", st)
	}
	if r.pid("a:later").IsZero() {
		t.Fatal("later not started")
	}
	// A reload with no change touches nothing.
	later := r.pid("a:later")
	if sum = r.apply(); len(sum.Updated)+len(sum.Added)+len(sum.Removed)+len(sum.Restarted) != 0 || r.pid("a:later") != later {
		t.Fatalf("no-op reload: %+v", sum)
	}
}

func TestApplyStartFailure(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {auto_start: true}}\n"})
	k, _ := r.rt.opts.Kinds.Kind("test.svc")
	k.(*kindtest.SvcKind).FailStarts.Store(1)
	r.write("c.yaml", `namespace: a
entries:
  - {name: x, kind: test.svc, lifecycle: {auto_start: true}}
  - {name: bad, kind: test.svc, lifecycle: {auto_start: true}}
  - {name: needs, kind: test.svc, peer: bad, lifecycle: {auto_start: true}}
`)
	sum := r.apply()
	if fmt.Sprint(sum.Failed) != "[a:bad a:needs]" {
		t.Fatalf("failed %v", sum.Failed)
	}
	if in, _ := r.rt.Info("a:needs"); in.Status != StatusFailed || !strings.Contains(in.Err.Error(), "dependency a:bad failed") {
		t.Fatalf("needs: %+v", in)
	}
	if r.pid("a:x").IsZero() {
		t.Fatal("a:x stopped")
	}
	// Changing the failed entry starts it, and what needed it.
	r.write("c.yaml", strings.Replace(readFile(t, filepath.Join(r.dir, "c.yaml")), "{name: bad, kind: test.svc,", "{name: bad, kind: test.svc, size: 2,", 1))
	r.apply()
	if r.pid("a:bad").IsZero() || r.pid("a:needs").IsZero() {
		t.Fatalf("not recovered: %+v", r.rt.Entries())
	}
}

func TestReloadRejected(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {auto_start: true}}\n"})
	x := r.pid("a:x")
	r.write("c.yaml", "namespace: a\nentries:\n  - {name: x, kind: test.svc, sise: 2, lifecycle: {auto_start: true}}\n")
	_, _, err := r.rt.Reload(context.Background(), r.loader, r.dir)
	if err == nil || !strings.Contains(err.Error(), `c.yaml:3:31: a:x: sise: unknown field (did you mean "size"?)`) {
		t.Fatalf("err %v", err)
	}
	if r.pid("a:x") != x || r.rejected() != 1 || r.applied() != 0 {
		t.Fatal("a rejected reload changed something")
	}
}

// BenchmarkReloadDiff1000 diffs and applies a 1,000-entry configuration in
// which one entry changed; only that entry is restarted.
func BenchmarkReloadDiff1000(b *testing.B) {
	kinds, _ := kindtest.Kinds()
	dir := b.TempDir()
	gen := func(size int) *config.Config {
		var sb strings.Builder
		sb.WriteString("namespace: bench\nentries:\n")
		for i := range 1000 {
			s := 1
			if i == 500 {
				s = size
			}
			fmt.Fprintf(&sb, "  - {name: e%d, kind: test.svc, size: %d, lifecycle: {auto_start: %v}}\n", i, s, i%2 == 0)
		}
		p := filepath.Join(dir, fmt.Sprintf("c%d.yaml", size))
		os.WriteFile(p, []byte(sb.String()), 0o644)
		cfg, err := (&config.Loader{Kinds: kinds}).Load(p)
		if err != nil {
			b.Fatal(err)
		}
		return cfg
	}
	cfgs := []*config.Config{gen(1), gen(2)}
	rt := NewRuntime(RuntimeOptions{Node: process.NewNode(process.Options{Name: "b"}), Kinds: kinds, Logger: slog.New(slog.DiscardHandler)})
	defer rt.Stop(context.Background())
	if err := rt.Start(context.Background(), cfgs[0]); err != nil {
		b.Fatal(err)
	}
	other := rt.snap.Load().slots["bench:e2"].state.Load().Instance.PID()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		sum, err := rt.Apply(context.Background(), cfgs[i%2])
		if err != nil || len(sum.Restarted) != 1 || sum.Restarted[0] != "bench:e500" || len(sum.Unchanged) != 999 {
			b.Fatalf("%v %+v", err, sum)
		}
	}
	b.StopTimer()
	if rt.snap.Load().slots["bench:e2"].state.Load().Instance.PID() != other {
		b.Fatal("an unchanged entry was touched")
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/reload")
}

func TestApplyLifecycleOnly(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": `namespace: a
entries:
  - {name: x, kind: test.svc, lifecycle: {auto_start: true}}
  - {name: y, kind: test.svc}
`})
	x := r.pid("a:x")
	r.write("c.yaml", `namespace: a
entries:
  - {name: x, kind: test.svc, lifecycle: {auto_start: true, depends_on: [y], restart: {initial_delay: 1s, max_attempts: 2}}}
  - {name: y, kind: test.svc}
`)
	sum := r.apply()
	if fmt.Sprint(sum.Updated) != "[a:x]" || len(sum.Restarted) != 0 || r.pid("a:x") != x {
		t.Fatalf("lifecycle-only change: %+v", sum)
	}
	if e, _ := r.rt.Entry("a:x"); e.Lifecycle.Restart.MaxAttempts != 2 {
		t.Fatal("new policy not in force")
	}
	if r.pid("a:y").IsZero() {
		t.Fatal("a new running dependency was not started")
	}
}

// Shared helpers (internal/testutil).
type syncBuffer = testutil.SyncBuffer

// A changed definition reaches its user even when the same reload changes
// the user's lifecycle alone: the user is offered the change (here it
// restarts), not kept as a lifecycle-only change running the old
// definition.
func TestApplyDefinitionChangeWithLifecycleChange(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": `namespace: a
entries:
  - {name: def, kind: test.def, size: 1}
  - {name: user, kind: test.svc, routee: def, lifecycle: {auto_start: true}}
`})
	user := r.pid("a:user")
	r.write("c.yaml", `namespace: a
entries:
  - {name: def, kind: test.def, size: 2}
  - {name: user, kind: test.svc, routee: def, lifecycle: {auto_start: true, restart: {max_attempts: 5}}}
`)
	sum := r.apply()
	if fmt.Sprint(sum.Updated) != "[a:def a:user]" || fmt.Sprint(sum.Restarted) != "[a:user]" || r.pid("a:user") == user || r.pid("a:user").IsZero() {
		t.Fatalf("definition and lifecycle change: %+v", sum)
	}
}

// Changing an entry's kind replaces it: the old kind's instance is never
// offered the new kind's spec (which it would refuse, with a warning).
func TestApplyKindChange(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": `namespace: a
entries:
  - {name: x, kind: test.upd, size: 1, lifecycle: {auto_start: true}}
`})
	before := r.pid("a:x")
	inst, _ := r.rt.Instance("a:x")
	old := inst.(*kindtest.UpdInstance)
	r.write("c.yaml", `namespace: a
entries:
  - {name: x, kind: test.svc, size: 1, lifecycle: {auto_start: true}}
`)
	sum := r.apply()
	if fmt.Sprint(sum.Updated) != "[a:x]" || fmt.Sprint(sum.Restarted) != "[a:x]" {
		t.Fatalf("kind change: %+v", sum)
	}
	if n := old.Offered.Load(); n != 0 {
		t.Errorf("the old kind's instance was offered the new spec %d times", n)
	}
	if p := r.pid("a:x"); p.IsZero() || p == before {
		t.Errorf("a:x was not replaced: %v then %v", before, p)
	}
	if inst, _ := r.rt.Instance("a:x"); inst == nil {
		t.Fatal("a:x not running")
	} else if _, isUpd := inst.(*kindtest.UpdInstance); isUpd {
		t.Error("a:x still runs as test.upd")
	}
	if logs := r.logs.String(); strings.Contains(logs, "update in place failed") || strings.Contains(logs, "update panicked") {
		t.Errorf("a kind change went through the old kind's updater:\n%s", logs)
	}
}
