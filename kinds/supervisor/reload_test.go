package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

func pidsByID(s *Supervisor) map[string]process.PID {
	m := map[string]process.PID{}
	for _, c := range s.WhichChildren() {
		m[c.ID] = c.PID
	}
	return m
}

func refresh(t *testing.T, s *Supervisor) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
}

// Children started at run time know their definition too: a reload that
// changes it restarts them (new PIDs, through the supervisor), except one
// whose spec says on_reload: keep, which keeps its process and old code.
// None of it counts toward the restart intensity: max_restarts 0 would
// escalate on the first restart that did.
func TestRefreshRestartsDynamicChildren(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:room")
	s := f.start("t:rooms", &Spec{Kind: KindDynamic, MaxRestarts: 0})
	ctx := context.Background()
	for _, id := range []string{"r1", "r2", "r3"} {
		spec := ChildSpec{ID: id, Process: "t:room", Args: []any{id}}
		if id == "r3" {
			spec.OnReload = ReloadKeep
		}
		if _, err := s.StartChild(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(f.kept, []string{"r3"}) {
		t.Fatalf("spawned unmanaged: %v, want only the child that keeps its code", f.kept)
	}
	before := pidsByID(s)
	refresh(t, s)
	if !maps.Equal(before, pidsByID(s)) {
		t.Fatal("a refresh with no new definition restarted children")
	}
	f.events()
	f.setDigest("t:room", "d2")
	refresh(t, s)
	after := pidsByID(s)
	for _, id := range []string{"r1", "r2"} {
		if after[id] == before[id] || after[id].IsZero() || f.env.Node.Alive(before[id]) {
			t.Fatalf("%s not restarted on the new definition: %v -> %v", id, before[id], after[id])
		}
		if c := infoOf(t, s, id); c.Status != StatusRunning || c.Restarts != 0 {
			t.Fatalf("%s after the reload: %+v", id, c)
		}
	}
	if after["r3"] != before["r3"] {
		t.Fatal("a child with on_reload: keep was restarted")
	}
	if got := f.events(); !slices.Equal(got, []string{"stop:r1", "start:r1", "stop:r2", "start:r2"}) {
		t.Fatalf("log %v: one_for_one restarts each changed child alone", got)
	}
	if s.Status() != StatusRunning {
		t.Fatalf("supervisor %s: a reload counted toward the intensity", s.Status())
	}
	// Refreshing again changes nothing: the children run the definition in force.
	refresh(t, s)
	if !maps.Equal(after, pidsByID(s)) {
		t.Fatal("a second refresh restarted children")
	}
}

// A reload restart goes through the strategy: under rest_for_one the
// changed child and those started after it restart (stopped in reverse,
// started in order), under all_for_one all of them, under one_for_one the
// changed one alone.
func TestRefreshRespectsStrategy(t *testing.T) {
	tests := []struct {
		strategy Strategy
		want     []string
	}{
		{OneForOne, []string{"stop:b", "start:b"}},
		{RestForOne, []string{"stop:c", "stop:b", "start:b", "start:c"}},
		{AllForOne, []string{"stop:c", "stop:b", "stop:a", "start:a", "start:b", "start:c"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.strategy), func(t *testing.T) {
			f := newFake(t)
			for _, w := range []registry.ID{"t:wa", "t:wb", "t:wc"} {
				f.addWorker(w)
			}
			s := f.start("t:sup", &Spec{Strategy: tt.strategy, MaxRestarts: 0, Children: []ChildSpec{
				{ID: "a", Process: "t:wa", Args: []any{"a"}},
				{ID: "b", Process: "t:wb", Args: []any{"b"}},
				{ID: "c", Process: "t:wc", Args: []any{"c"}},
			}})
			f.events()
			f.setDigest("t:wb", "d2")
			refresh(t, s)
			if got := f.events(); !slices.Equal(got, tt.want) {
				t.Fatalf("log %v, want %v", got, tt.want)
			}
			if s.Status() != StatusRunning {
				t.Fatalf("supervisor %s", s.Status())
			}
		})
	}
}

// A stubborn child on a changed definition is stopped within its shutdown
// deadline (then killed), as any stop of the supervisor's is.
func TestRefreshRespectsShutdown(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:stubborn")
	s := f.start("t:sup", &Spec{Children: []ChildSpec{{ID: "x", Process: "t:stubborn", Args: []any{"x"}, Shutdown: 50 * time.Millisecond}}})
	old := infoOf(t, s, "x").PID
	f.setDigest("t:stubborn", "d2")
	start := time.Now()
	refresh(t, s)
	if took := time.Since(start); took < 50*time.Millisecond || took > 5*time.Second {
		t.Fatalf("refresh took %v for a 50ms shutdown", took)
	}
	if f.env.Node.Alive(old) || infoOf(t, s, "x").PID == old {
		t.Fatal("the stubborn child was not replaced")
	}
}

// A partition supervisor's workers are restarted on a new definition in
// their own slots, one at a time: the supervisor keeps its PID and every
// key its worker.
func TestRefreshPartitionWorkersInPlace(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:shard")
	spec := &Spec{Kind: KindPartition, Partitions: 4, Worker: ChildSpec{Process: "t:shard"}}
	s := f.start("t:shards", spec)
	keys := []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"}
	slotOf := func() map[string]string {
		m := map[string]string{}
		pids := map[process.PID]string{}
		for _, c := range s.WhichChildren() {
			pids[c.PID] = c.ID
		}
		for _, k := range keys {
			pid, err := s.Route(k)
			if err != nil {
				t.Fatal(err)
			}
			m[k] = pids[pid]
		}
		return m
	}
	slots, before, self := slotOf(), pidsByID(s), s.PID()
	f.setDigest("t:shard", "d2")
	applied, err := s.Update(context.Background(), &registry.Entry{ID: "t:shards", Kind: KindPartition, Spec: spec})
	if err != nil || !applied {
		t.Fatalf("new worker code needs a restart of the partition supervisor: %v %v", applied, err)
	}
	if s.PID() != self || s.Status() != StatusRunning {
		t.Fatal("the partition supervisor was replaced")
	}
	for id, pid := range pidsByID(s) {
		if pid == before[id] || pid.IsZero() {
			t.Fatalf("worker %s not restarted on the new definition", id)
		}
	}
	if !maps.Equal(slots, slotOf()) {
		t.Fatalf("keys moved: %v -> %v", slots, slotOf())
	}
}

// A tree nested in a supervisor is refreshed by its root, top down; asked
// directly, it leaves that to its parent.
func TestRefreshNestedTree(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	f.addSup("t:inner", &Spec{Children: kids("x", "y")})
	s := f.start("t:outer", &Spec{Children: []ChildSpec{{ID: "inner", Process: "t:inner"}}})
	innerPID := infoOf(t, s, "inner").PID
	inner, ok := s.ByPID(innerPID)
	if !ok {
		t.Fatal("no nested tree")
	}
	before := pidsByID(inner)
	f.setDigest("t:w", "d2")
	refresh(t, inner)
	if !maps.Equal(before, pidsByID(inner)) {
		t.Fatal("a nested tree refreshed on its own")
	}
	refresh(t, s)
	if infoOf(t, s, "inner").PID != innerPID {
		t.Fatal("the nested tree was restarted whole though its own entry is unchanged")
	}
	for id, pid := range pidsByID(inner) {
		if pid == before[id] || pid.IsZero() {
			t.Fatalf("nested child %s not restarted on the new definition", id)
		}
	}
	// The nested tree's own entry changed: it is restarted whole.
	f.setDigest("t:inner", "s2")
	refresh(t, s)
	if now := infoOf(t, s, "inner").PID; now == innerPID || now.IsZero() {
		t.Fatal("a nested tree on a changed definition was not restarted")
	}
}

// on_reload changes in place: switching a declared child to keep restarts
// nothing, and from then on a new definition leaves it alone.
func TestOnReloadChangesInPlace(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:sup", &Spec{Children: kids("a", "b")})
	update := func(spec *Spec) {
		t.Helper()
		applied, err := s.Update(context.Background(), &registry.Entry{ID: "t:sup", Kind: KindStatic, Spec: spec})
		if err != nil || !applied {
			t.Fatalf("update: %v %v", applied, err)
		}
	}
	before := pidsByID(s)
	next := kids("a", "b")
	next[1].OnReload = ReloadKeep
	update(&Spec{Children: next})
	if !maps.Equal(before, pidsByID(s)) {
		t.Fatal("changing on_reload restarted a child")
	}
	f.setDigest("t:w", "d2")
	update(&Spec{Children: next})
	after := pidsByID(s)
	if after["a"] == before["a"] || after["b"] != before["b"] {
		t.Fatalf("a (restart) and b (keep) after new code: %v -> %v", before, after)
	}
}

// A child whose spec names no shutdown stops within its entry's
// lifecycle.stop_timeout, and a nested tree has its entry's
// lifecycle.start_timeout to start.
func TestChildLifecycleTimeouts(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:stubborn")
	f.mu.Lock()
	f.entries["t:stubborn"].Lifecycle.StopTimeout = 60 * time.Millisecond
	f.mu.Unlock()
	s := f.start("t:sup", &Spec{Children: []ChildSpec{{ID: "x", Process: "t:stubborn", Args: []any{"x"}}}})
	if d := infoOf(t, s, "x").Shutdown; d != 60*time.Millisecond {
		t.Fatalf("shutdown %v, want the entry's stop_timeout", d)
	}
	began := time.Now()
	if err := s.TerminateChild(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 60*time.Millisecond || took > 3*time.Second {
		t.Fatalf("stop took %v; the entry's stop_timeout is 60ms (the default would be %v)", took, DefaultShutdown)
	}

	f.addWorker("t:slow")
	inner := f.addSup("t:inner", &Spec{Children: []ChildSpec{{ID: "s", Process: "t:slow"}}})
	f.mu.Lock()
	inner.Lifecycle.StartTimeout = 50 * time.Millisecond
	f.mu.Unlock()
	gate := make(chan struct{})
	f.setGate("t:slow", gate)
	defer close(gate)
	began = time.Now()
	_, err := Start(context.Background(), f.env, "t:outer", &Spec{Children: []ChildSpec{{ID: "inner", Process: "t:inner"}}}, process.SpawnOptions{})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a nested tree that cannot start: %v", err)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("start gave up after %v; the nested entry's start_timeout is 50ms", took)
	}
}

// tokenKind reads a token, so a child's entry can take one from the
// environment.
type tokenKind struct{}

func (tokenKind) Name() string                   { return "test.token" }
func (tokenKind) Decode(d *registry.Decoder) any { return d.String("token", "") }

// A child's error may quote what its entry took from the environment; the
// supervisor's log lines show the reference instead.
func TestChildExitLogHidesEnvironmentValues(t *testing.T) {
	kinds := registry.NewRegistry()
	kinds.Register(tokenKind{})
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("namespace: t\nentries:\n  - name: w\n    kind: test.token\n    token: ${env:TOKEN}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The fake worker fails with "boom": the value the entry took.
	cfg, err := (&config.Loader{Kinds: kinds, Environ: func() []string { return []string{"TOKEN=boom"} }}).Load(p)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(t)
	var logs testutil.SyncBuffer
	f.env.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	f.mu.Lock()
	f.entries["t:w"] = cfg.Entries["t:w"]
	f.mu.Unlock()
	s := f.start("t:sup", &Spec{MaxRestarts: 3, Children: kids("a")})
	old := infoOf(t, s, "a").PID
	send(t, f.env.Node, old, "crash")
	waitRunning(t, s, "a", old)
	out := logs.String()
	if !strings.Contains(out, `msg="child exited"`) || !strings.Contains(out, `error=${env:TOKEN}`) || strings.Contains(out, "boom") {
		t.Fatalf("logs:\n%s", out)
	}
}
