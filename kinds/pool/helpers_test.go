package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeRegistry is a registry.Lookup whose Spawn starts Go Behavior
// processes made by a template function.
type fakeRegistry struct {
	node      *process.Node
	mu        sync.Mutex
	templates map[registry.ID]func() process.Behavior
	instances map[registry.ID]registry.Instance
	entries   map[registry.ID]*registry.Entry
	spawned   atomic.Int64
	failSpawn atomic.Bool
	failAfter atomic.Int64 // > 0: spawns past this many fail
	// beforeSpawn, when set, runs at the start of every Spawn (set it
	// before the pool's loop can spawn).
	beforeSpawn func()
}

func (f *fakeRegistry) Entry(id registry.ID) (*registry.Entry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	return e, ok
}

func (f *fakeRegistry) Instance(id registry.ID) (registry.Instance, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, ok := f.instances[id]
	return i, ok
}

func (f *fakeRegistry) Spawn(id registry.ID, opts registry.SpawnOptions) (process.PID, error) {
	f.mu.Lock()
	mk := f.templates[id]
	f.mu.Unlock()
	if mk == nil {
		return process.PID{}, value.NewError(value.KindNotFound, "no entry %s", id)
	}
	if f.beforeSpawn != nil {
		f.beforeSpawn()
	}
	if n := f.failAfter.Load(); f.failSpawn.Load() || (n > 0 && f.spawned.Load() >= n) {
		return process.PID{}, value.NewError(value.KindInternal, "spawn refused by the test")
	}
	f.spawned.Add(1)
	return f.node.Spawn(mk(), opts.SpawnOptions)
}

type harness struct {
	t    *testing.T
	node *process.Node
	reg  *fakeRegistry
	env  *registry.Env
	logs *syncBuffer
	dead *letterBox // the node's dead letters
}

// letterBox keeps a node's dead letters.
type letterBox struct {
	mu  sync.Mutex
	got []process.DeadLetter
}

func (b *letterBox) DeadLetter(d process.DeadLetter) {
	b.mu.Lock()
	b.got = append(b.got, d)
	b.mu.Unlock()
}

func (b *letterBox) all() []process.DeadLetter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]process.DeadLetter(nil), b.got...)
}

func newHarness(t testing.TB) *harness {
	dead := &letterBox{}
	node := process.NewNode(process.Options{Name: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DeadLetters: dead})
	fr := &fakeRegistry{
		node: node, templates: map[registry.ID]func() process.Behavior{},
		instances: map[registry.ID]registry.Instance{}, entries: map[registry.ID]*registry.Entry{},
	}
	logs := &syncBuffer{}
	env := &registry.Env{
		Node:    node,
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics: prometheus.NewRegistry(),
		Entries: fr,
	}
	h := &harness{node: node, reg: fr, env: env, logs: logs, dead: dead}
	if tt, ok := t.(*testing.T); ok {
		h.t = tt
	}
	return h
}

// routee registers a template under id.
func (h *harness) routee(id registry.ID, mk func() process.Behavior) {
	h.reg.mu.Lock()
	h.reg.templates[id] = mk
	h.reg.entries[id] = &registry.Entry{ID: id, Kind: "process.lua"}
	h.reg.mu.Unlock()
}

func (h *harness) start(t testing.TB, spec *Spec) *Pool {
	t.Helper()
	if spec.Routee == "" {
		spec.Routee = "app:worker"
	}
	if spec.Timeout == 0 {
		spec.Timeout = DefaultTimeout
	}
	if spec.Interval == 0 {
		spec.Interval = DefaultInterval
	}
	if spec.Strategy == "" {
		spec.Strategy = RoundRobin
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := Start(ctx, h.env, "app:pool", spec, registry.StartOptions{})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	h.reg.mu.Lock()
	h.reg.instances["app:pool"] = p
	h.reg.entries["app:pool"] = &registry.Entry{ID: "app:pool", Kind: KindName, Spec: spec}
	h.reg.mu.Unlock()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Stop(ctx)
	})
	return p
}

// replica is a configurable Go routee. It replies asynchronously after
// delay (so one replica can answer many asks at once, like a routee doing
// I/O), or with an error, or crashes.
type replica struct {
	name  string
	delay func() time.Duration
	fail  error              // reply with this error
	crash func(any) bool     // panic on this payload
	seen  *atomic.Int64      // counts messages received
	log   chan<- process.PID // reports who got a message, when set
}

func (r *replica) Receive(c process.Context, m process.Message) {
	if r.seen != nil {
		r.seen.Add(1)
	}
	if r.log != nil {
		r.log <- c.Self()
	}
	if r.crash != nil && r.crash(m.Payload) {
		panic("replica told to crash")
	}
	if !m.CanReply() {
		return
	}
	var d time.Duration
	if r.delay != nil {
		d = r.delay()
	}
	self := c.Self()
	reply := func() {
		if r.fail != nil {
			_, _ = m.Reply(self, nil, r.fail)
			return
		}
		_, _ = m.Reply(self, fmt.Sprintf("%s:%v", r.name, m.Payload), nil)
	}
	if d <= 0 {
		reply()
		return
	}
	time.AfterFunc(d, reply)
}

// worker processes each message for work, synchronously, and counts it.
type worker struct {
	work time.Duration
	done *atomic.Int64
}

func (w *worker) Receive(c process.Context, m process.Message) {
	if w.work > 0 {
		time.Sleep(w.work)
	}
	if w.done != nil {
		w.done.Add(1)
	}
	if m.CanReply() {
		_, _ = m.Reply(c.Self(), m.Payload, nil)
	}
}

// blocker blocks on its gate for every message.
type blocker struct {
	gate <-chan struct{}
	got  chan<- process.PID
}

func (b *blocker) Receive(c process.Context, m process.Message) {
	if b.got != nil {
		b.got <- c.Self()
	}
	<-b.gate
	if m.CanReply() {
		_, _ = m.Reply(c.Self(), "ok", nil)
	}
}

// counterValue reads a counter (or a gauge, or a histogram's count) from reg.
var counterValue = testutil.MetricValue

func labelNames(t testing.TB, reg *prometheus.Registry, name string) []string {
	t.Helper()
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			var out []string
			for _, l := range mf.GetMetric()[0].GetLabel() {
				out = append(out, l.GetName())
			}
			return out
		}
	}
	return nil
}

func asAggregate(t testing.TB, err error) *value.Error {
	t.Helper()
	var ve *value.Error
	if !errors.As(err, &ve) || ve.Kind != value.KindAggregate {
		t.Fatalf("want an aggregate error, got %T %v", err, err)
	}
	return ve
}

// Shared helpers (internal/testutil).
type syncBuffer = testutil.SyncBuffer

var eventually = testutil.Eventually
