package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// fakeLookup is the registry seen by supervisors under test: its entries
// are Go worker templates ("w:<name>") and supervisor entries, and it keeps
// an ordered log of what its workers did.
type fakeLookup struct {
	t       testing.TB
	env     *registry.Env
	mu      sync.Mutex
	entries map[registry.ID]*registry.Entry
	log     []string
	fail    map[registry.ID]int           // spawns of that entry still to fail
	gate    map[registry.ID]chan struct{} // spawns of that entry wait for it
	release chan struct{}                 // lets stubborn workers return at test end
	spawned int
	kept    []string // workers spawned unmanaged (on_reload: keep)
}

// worker modes, chosen by the entry's name prefix.
const (
	modeNormal   = "w"
	modeStubborn = "stubborn" // ignores shutdown requests
)

func newFake(t testing.TB) *fakeLookup {
	f := &fakeLookup{
		t:       t,
		entries: map[registry.ID]*registry.Entry{},
		fail:    map[registry.ID]int{},
		gate:    map[registry.ID]chan struct{}{},
		release: make(chan struct{}),
	}
	f.env = &registry.Env{
		Node:      process.NewNode(process.Options{Name: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics:   prometheus.NewRegistry(),
		Entries:   f,
		Instances: &registry.Directory{},
	}
	t.Cleanup(func() { close(f.release) })
	return f
}

func (f *fakeLookup) addWorker(id registry.ID) {
	f.mu.Lock()
	f.entries[id] = &registry.Entry{ID: id, Kind: "process.lua", Digest: "d1"}
	f.mu.Unlock()
}

func (f *fakeLookup) addSup(id registry.ID, spec *Spec) *registry.Entry {
	e := &registry.Entry{ID: id, Kind: spec.Kind, Spec: spec, Digest: "s1"}
	if e.Kind == "" {
		e.Kind = KindStatic
	}
	f.mu.Lock()
	f.entries[id] = e
	f.mu.Unlock()
	return e
}

func (f *fakeLookup) setDigest(id registry.ID, d string) {
	f.mu.Lock()
	e := *f.entries[id]
	e.Digest = d
	f.entries[id] = &e
	f.mu.Unlock()
}

func (f *fakeLookup) failNext(id registry.ID, n int) {
	f.mu.Lock()
	f.fail[id] = n
	f.mu.Unlock()
}

func (f *fakeLookup) setGate(id registry.ID, ch chan struct{}) {
	f.mu.Lock()
	if ch == nil {
		delete(f.gate, id)
	} else {
		f.gate[id] = ch
	}
	f.mu.Unlock()
}

func (f *fakeLookup) record(s string) {
	f.mu.Lock()
	f.log = append(f.log, s)
	f.mu.Unlock()
}

// events returns the log and clears it.
func (f *fakeLookup) events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.log
	f.log = nil
	return out
}

func (f *fakeLookup) Entry(id registry.ID) (*registry.Entry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	return e, ok
}

func (f *fakeLookup) Instance(id registry.ID) (registry.Instance, bool) { return nil, false }

var errSpawn = errors.New("spawn refused by the test")

func (f *fakeLookup) Spawn(id registry.ID, opts registry.SpawnOptions) (process.PID, error) {
	f.mu.Lock()
	e, ok := f.entries[id]
	gate := f.gate[id]
	failing := f.fail[id] > 0
	if failing {
		f.fail[id]--
	}
	f.spawned++
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if !ok {
		return process.PID{}, fmt.Errorf("spawn %s: %w", id, process.ErrNoProcess)
	}
	if failing {
		return process.PID{}, errSpawn
	}
	if isSupervisorKind(e.Kind) {
		return NewStaticKind().Spawn(f.env, e, opts)
	}
	name := id.Name()
	if len(opts.Args) > 0 {
		name = fmt.Sprint(opts.Args[0])
	}
	stubborn := strings.HasPrefix(id.Name(), modeStubborn)
	if !opts.Managed {
		f.mu.Lock()
		f.kept = append(f.kept, name)
		f.mu.Unlock()
	}
	// Logged here, not in the worker, so the log has the spawn order.
	f.record("start:" + name)
	return f.env.Node.SpawnFunc(f.worker(name, stubborn), opts.SpawnOptions)
}

// worker is a Go child that crashes, exits normally or with shutdown, or
// answers pings, on command; a stubborn one ignores requests to stop.
func (f *fakeLookup) worker(name string, stubborn bool) process.ProcFunc {
	return func(h *process.Proc) (any, error) {
		for {
			m, err := h.Receive(context.Background())
			if err != nil {
				if stubborn && f.env.Node.Alive(h.Self()) {
					f.record("ignore:" + name)
					select {
					case <-f.release:
					case <-time.After(20 * time.Second):
					}
					return nil, nil
				}
				if f.env.Node.Alive(h.Self()) {
					f.record("stop:" + name) // asked to stop, not killed
				}
				return nil, nil
			}
			switch m.Topic {
			case "crash":
				return nil, errors.New("boom")
			case "exit":
				return "done", nil
			case "shutdown":
				return nil, process.ErrShutdown
			case "ping":
				_, _ = m.Reply(h.Self(), "pong", nil)
			}
		}
	}
}

// start starts a supervisor for spec directly (as the root would) and stops
// it at the end of the test.
func (f *fakeLookup) start(id registry.ID, spec *Spec) *Supervisor {
	f.t.Helper()
	s, err := Start(context.Background(), f.env, id, spec, process.SpawnOptions{})
	if err != nil {
		f.t.Fatalf("start %s: %v", id, err)
	}
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	return s
}

// child returns the info of child id.
func infoOf(t testing.TB, s *Supervisor, id string) ChildInfo {
	t.Helper()
	for _, c := range s.WhichChildren() {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no child %q in %v", id, s.WhichChildren())
	return ChildInfo{}
}

func hasChild(s *Supervisor, id string) bool {
	return slices.ContainsFunc(s.WhichChildren(), func(c ChildInfo) bool { return c.ID == id })
}

// waitRunning waits until child id runs with a PID other than old.
func waitRunning(t testing.TB, s *Supervisor, id string, old process.PID) process.PID {
	t.Helper()
	var pid process.PID
	waitFor(t, "child "+id+" running with a new pid", func() bool {
		for _, c := range s.WhichChildren() {
			if c.ID == id && c.Status == StatusRunning && !c.PID.IsZero() && c.PID != old {
				pid = c.PID
				return true
			}
		}
		return false
	})
	return pid
}

func send(t testing.TB, n *process.Node, pid process.PID, topic string) {
	t.Helper()
	if err := n.Send(pid, process.Message{Topic: topic}); err != nil {
		t.Fatalf("send %s to %s: %v", topic, pid, err)
	}
}

// ping proves pid accepts messages.
func ping(t testing.TB, n *process.Node, pid process.PID) {
	t.Helper()
	v, _, err := n.Ask(pid, process.Message{Topic: "ping"}, 5*time.Second)
	if err != nil || v != "pong" {
		t.Fatalf("ping %s: %v %v", pid, v, err)
	}
}

func kids(ids ...string) []ChildSpec {
	out := make([]ChildSpec, len(ids))
	for i, id := range ids {
		out[i] = ChildSpec{ID: id, Process: "t:w", Args: []any{id}}
	}
	return out
}

// Shared helpers (internal/testutil).
var waitFor = testutil.Eventually
