package pgscope

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeHealth records the checks a scope registers.
type fakeHealth struct {
	mu     sync.Mutex
	checks map[string]func() error
}

func (h *fakeHealth) SetCheck(name string, check func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.checks == nil {
		h.checks = map[string]func() error{}
	}
	h.checks[name] = check
}

func (h *fakeHealth) RemoveCheck(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.checks, name)
}

func (h *fakeHealth) get(name string) (func() error, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.checks[name]
	return c, ok
}

type harness struct {
	t      *testing.T
	node   *process.Node
	env    *registry.Env
	health *fakeHealth
	logs   *syncBuffer
	reg    *prometheus.Registry
	s      *Scope
	procs  []process.PID
}

// newHarness starts a scope named test:pg on a fresh node; mod adjusts the
// default spec. Everything is stopped at cleanup.
func newHarness(t *testing.T, mod func(*Spec)) *harness {
	t.Helper()
	h := &harness{t: t, health: &fakeHealth{}, logs: &syncBuffer{}, reg: prometheus.NewRegistry()}
	h.node = process.NewNode(process.Options{Name: "n1", Logger: slog.New(slog.NewTextHandler(h.logs, nil))})
	h.env = &registry.Env{
		Node:    h.node,
		Logger:  slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics: h.reg,
		Health:  h.health,
	}
	spec := DefaultSpec()
	if mod != nil {
		mod(&spec)
	}
	s, err := New(h.env, "test:pg", spec)
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	t.Cleanup(h.close)
	return h
}

func (h *harness) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.s.Stop(ctx); err != nil {
		h.t.Errorf("stop scope: %v", err)
	}
	for _, p := range h.procs {
		_, _ = h.node.Stop(ctx, p)
	}
}

// sink is a member process that hands every message to a channel.
type sink struct{ got chan process.Message }

func (s sink) Receive(_ process.Context, m process.Message) {
	select {
	case s.got <- m:
	default:
	}
}

// spawn starts a member process; its messages arrive on the returned
// channel (up to 64 buffered).
func (h *harness) spawn() (process.PID, chan process.Message) {
	h.t.Helper()
	ch := make(chan process.Message, 64)
	pid, err := h.node.Spawn(sink{ch}, process.SpawnOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.procs = append(h.procs, pid)
	return pid, ch
}

func (h *harness) pid() process.PID {
	h.t.Helper()
	p, _ := h.spawn()
	return p
}

// kill ends a process and waits for it to be gone.
func (h *harness) kill(pid process.PID) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := h.node.Stop(ctx, pid); err != nil {
		h.t.Fatal(err)
	}
}

// sync waits until the loop has run every command queued before it, as
// OTP's sys:log(Scope, get) does in pg_SUITE.
func (h *harness) sync() {
	h.t.Helper()
	if err := h.s.do("sync", func() error { return nil }); err != nil {
		h.t.Fatal(err)
	}
}

// next receives one event, failing after a generous deadline.
func next(t *testing.T, sub *Subscription) Event {
	t.Helper()
	select {
	case ev, ok := <-sub.C():
		if !ok {
			t.Fatal("subscription closed while an event was expected")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return Event{}
}

// none asserts that no event is buffered once the loop has caught up.
func (h *harness) none(sub *Subscription) {
	h.t.Helper()
	h.sync()
	select {
	case ev, ok := <-sub.C():
		if ok {
			h.t.Fatalf("unexpected event %v %s %v", ev.Kind, ev.Group, ev.PIDs)
		}
	default:
	}
}

func expectEvent(t *testing.T, sub *Subscription, kind EventKind, group string, pids ...process.PID) {
	t.Helper()
	ev := next(t, sub)
	if ev.Kind != kind || ev.Group != group || !equalPIDs(ev.PIDs, pids) {
		t.Fatalf("event = %v %q %v, want %v %q %v", ev.Kind, ev.Group, ev.PIDs, kind, group, pids)
	}
}

func equalPIDs(a, b []process.PID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sameMembers compares as multisets (OTP's tests sort).
func sameMembers(a, b []process.PID) bool {
	if len(a) != len(b) {
		return false
	}
	n := map[process.PID]int{}
	for _, p := range a {
		n[p]++
	}
	for _, p := range b {
		n[p]--
	}
	for _, c := range n {
		if c != 0 {
			return false
		}
	}
	return true
}

func mustKind(t *testing.T, err error, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

// Shared helpers (internal/testutil).
type syncBuffer = testutil.SyncBuffer

var eventually = testutil.Eventually
