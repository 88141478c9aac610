package runtime

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// idleKind's instance is a process that waits to be stopped.
type idleKind struct{}

func (idleKind) Name() string                 { return "test.idle" }
func (idleKind) Decode(*registry.Decoder) any { return nil }

type idleInstance struct{ pid process.PID }

func (i idleInstance) PID() process.PID { return i.pid }

func (idleKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		<-p.Context().Done()
		return nil, nil
	}, process.SpawnOptions{})
	return idleInstance{pid}, err
}

// silentOwner watches nothing: like a root supervisor that has died, it
// never reports an exit. alive is what it says of itself.
type silentOwner struct{ alive atomic.Bool }

func (*silentOwner) Watch(registry.ID, registry.Instance) {}
func (*silentOwner) PID() process.PID                     { return process.PID{} }
func (o *silentOwner) Alive() bool                        { return o.alive.Load() }

// TestDeadProcessNeverReportedRunning: an entry whose process exited while
// nobody told the runtime (its supervisor is dead, or has not got to it
// yet) is not running in Info, Entries, NotReady or runner_entries.
func TestDeadProcessNeverReportedRunning(t *testing.T) {
	kinds := registry.NewRegistry()
	kinds.Register(idleKind{})
	dir := t.TempDir()
	os.WriteFile(dir+"/c.yaml", []byte("namespace: a\nentries:\n  - {name: s, kind: test.idle, lifecycle: {auto_start: true}}\n"), 0o644)
	cfg, err := (&config.Loader{Kinds: kinds}).Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	node := process.NewNode(process.Options{Name: "t"})
	reg := prometheus.NewRegistry()
	rt := NewRuntime(RuntimeOptions{Node: node, Kinds: kinds, Metrics: reg, StopTimeout: time.Second})
	defer rt.Stop(context.Background())
	owner := &silentOwner{}
	owner.alive.Store(true)
	rt.SetOwner(owner)
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	running := func() float64 { return entriesGauge(t, reg, "running") }
	if st := statusOf(rt, "a:s"); st != StatusRunning || len(rt.NotReady()) != 0 || running() != 1 {
		t.Fatalf("before: %s, not ready %v, running %v", st, rt.NotReady(), running())
	}
	inst, _ := rt.Instance("a:s")
	node.Kill(inst.PID())

	// The owner lives: the restart is pending.
	info, _ := rt.Info("a:s")
	if info.Status != StatusStarting || info.Err == nil || !strings.Contains(info.Err.Error(), "restarts it") {
		t.Fatalf("owner alive: %s %v", info.Status, info.Err)
	}
	// The owner is gone: nothing will restart it.
	owner.alive.Store(false)
	for _, in := range rt.Entries() {
		if in.Entry.ID == "a:s" && (in.Status != StatusFailed || !strings.Contains(in.Err.Error(), "no supervisor")) {
			t.Fatalf("owner dead: %s %v", in.Status, in.Err)
		}
	}
	if nr := rt.NotReady(); len(nr) != 1 || nr[0] != "a:s" {
		t.Fatalf("not ready %v", nr)
	}
	if running() != 0 || entriesGauge(t, reg, "failed") != 1 {
		t.Fatalf("runner_entries running %v", running())
	}
}

// entriesGauge returns runner_entries{status} as reg serves it.
func entriesGauge(t *testing.T, reg *prometheus.Registry, status string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "runner_entries" {
			continue
		}
		for _, m := range mf.Metric {
			if m.GetLabel()[0].GetValue() == status {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no runner_entries{status=%q}", status)
	return 0
}
