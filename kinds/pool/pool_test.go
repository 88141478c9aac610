package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

func echoRoutee(h *harness, seen *atomic.Int64) {
	n := 0
	h.routee("app:worker", func() process.Behavior {
		n++
		return &replica{name: fmt.Sprintf("r%d", n), seen: seen}
	})
}

func TestRoundRobinSpreadsEvenly(t *testing.T) {
	h := newHarness(t)
	got := make(chan process.PID, 300)
	h.routee("app:worker", func() process.Behavior { return &replica{log: got} })
	p := h.start(t, &Spec{Size: 3})
	for i := 0; i < 300; i++ {
		if err := p.Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[process.PID]int{}
	for i := 0; i < 300; i++ {
		counts[<-got]++
	}
	if len(counts) != 3 {
		t.Fatalf("%d routees got messages", len(counts))
	}
	for pid, c := range counts {
		if c != 100 {
			t.Errorf("%s got %d of 300", pid, c)
		}
	}
	if v := counterValue(t, h.env.Metrics, "router_pool_messages_routed_total", map[string]string{"pool": "app:pool", "strategy": "round_robin"}); v != 300 {
		t.Errorf("routed metric %v", v)
	}
	if v := counterValue(t, h.env.Metrics, "router_pool_routees", map[string]string{"pool": "app:pool"}); v != 3 {
		t.Errorf("routees gauge %v", v)
	}
}

func TestRandomReachesEveryRoutee(t *testing.T) {
	h := newHarness(t)
	got := make(chan process.PID, 600)
	h.routee("app:worker", func() process.Behavior { return &replica{log: got} })
	p := h.start(t, &Spec{Size: 3, Strategy: Random})
	for i := 0; i < 600; i++ {
		if err := p.Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[process.PID]int{}
	for i := 0; i < 600; i++ {
		counts[<-got]++
	}
	for pid, c := range counts {
		if c < 100 { // expected 200; below 100 is (far) beyond chance
			t.Errorf("%s got only %d of 600", pid, c)
		}
	}
	if len(counts) != 3 {
		t.Errorf("%d routees reached", len(counts))
	}
}

func TestSmallestMailboxPrefersIdle(t *testing.T) {
	h := newHarness(t)
	gate := make(chan struct{})
	got := make(chan process.PID, 100)
	h.routee("app:worker", func() process.Behavior { return &blocker{gate: gate, got: got} })
	p := h.start(t, &Spec{Size: 3, Strategy: SmallestMailbox})
	defer close(gate)
	// Each message goes to an idle routee while there is one.
	busy := map[process.PID]bool{}
	for i := 0; i < 3; i++ {
		if err := p.Tell(i); err != nil {
			t.Fatal(err)
		}
		pid := <-got
		if busy[pid] {
			t.Fatalf("message %d went to busy %s while another routee was idle", i, pid)
		}
		busy[pid] = true
	}
	// All busy: the next three go one to each (fewest queued), not all to one.
	for i := 0; i < 3; i++ {
		if err := p.Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	for _, pid := range p.snap.Load().pids {
		if n := h.node.MailboxLen(pid); n != 1 {
			t.Errorf("%s holds %d queued, want 1", pid, n)
		}
	}
}

func TestBroadcastReachesAll(t *testing.T) {
	h := newHarness(t)
	var seen atomic.Int64
	echoRoutee(h, &seen)
	p := h.start(t, &Spec{Size: 4, Strategy: Broadcast})
	for i := 0; i < 5; i++ {
		if err := p.Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "20 deliveries", func() bool { return seen.Load() == 20 })
	// An ask to a broadcast pool is answered by the first routee to reply.
	v, from, err := p.Ask("x", time.Second)
	if err != nil || from.IsZero() || !strings.Contains(fmt.Sprint(v), ":x") {
		t.Fatalf("%v %v %v", v, from, err)
	}
}

func TestConsistentHash(t *testing.T) {
	h := newHarness(t)
	h.routee("app:worker", func() process.Behavior { return &replica{} })
	p := h.start(t, &Spec{Size: 5, Strategy: ConsistentHash})
	owner := func(payload any) process.PID {
		_, from, err := p.Ask(payload, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return from
	}
	for _, k := range []string{"a", "user-42", "zz"} {
		first := owner(k)
		for i := 0; i < 5; i++ {
			if o := owner(k); o != first {
				t.Fatalf("key %q went to %s then %s", k, first, o)
			}
		}
		// SPEC's key rule: a table's key field is the key.
		if o := owner(map[string]any{"key": k, "other": 1.0}); o != first {
			t.Errorf("table with key %q went elsewhere", k)
		}
		if o := owner(map[any]any{"key": k}); o != first {
			t.Errorf("mixed table with key %q went elsewhere", k)
		}
	}
	if owner(42.0) != owner("42") {
		t.Error("the number 42 and the string \"42\" are the same key")
	}
	spread := map[process.PID]bool{}
	for i := 0; i < 200; i++ {
		spread[owner(float64(i))] = true
	}
	if len(spread) != 5 {
		t.Errorf("200 keys reached %d of 5 routees", len(spread))
	}
	_, _, err := p.Ask(map[string]any{"nokey": true}, time.Second)
	if !errors.Is(err, ErrNoKey) || value.KindOf(err) != value.KindInvalid {
		t.Errorf("no key: %v", err)
	}
	if err := p.Tell(true); !errors.Is(err, ErrNoKey) {
		t.Errorf("tell without key: %v", err)
	}
}

func TestRingMovesFewKeysOnResize(t *testing.T) {
	const keys = 10000
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint(i)
		}
		return out
	}
	r10, r11 := newRing(names(10)), newRing(names(11))
	moved, per := 0, make([]int, 10)
	for i := 0; i < keys; i++ {
		k := fmt.Sprintf("key-%d", i)
		a, b := r10.lookup(k), r11.lookup(k)
		per[a]++
		if a != b {
			moved++
			if b != 10 {
				t.Fatalf("key %s moved from %d to %d, not to the new routee", k, a, b)
			}
		}
	}
	// Ideal is 1/11 of the keys (909); allow for the ring's variance.
	if moved < keys/22 || moved > keys/6 {
		t.Errorf("adding a routee moved %d of %d keys", moved, keys)
	}
	for i, n := range per {
		if n < keys/10/2 || n > keys/10*2 {
			t.Errorf("routee %d owns %d of %d keys", i, n, keys)
		}
	}
	if (&ring{}).lookup("x") != -1 {
		t.Error("an empty ring owns nothing")
	}
}

func TestSendAndAskToPoolPID(t *testing.T) {
	h := newHarness(t)
	var seen atomic.Int64
	echoRoutee(h, &seen)
	p := h.start(t, &Spec{Size: 2})
	if err := h.node.Send(p.PID(), process.Message{Topic: "t", Payload: 1.0}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a send to the pool's PID to reach a routee", func() bool { return seen.Load() == 1 })
	v, from, err := h.node.Ask(p.PID(), process.Message{Topic: "t", Payload: "k"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	routees := p.snap.Load().pids
	if from != routees[0] && from != routees[1] {
		t.Errorf("reply attributed to %s, not a routee", from)
	}
	if !strings.Contains(v.(string), ":k") {
		t.Errorf("reply %v", v)
	}
}

func TestCrashedRouteeRestartedInPlace(t *testing.T) {
	h := newHarness(t)
	var seen atomic.Int64
	h.routee("app:worker", func() process.Behavior {
		return &replica{seen: &seen, crash: func(v any) bool { return v == "crash" }}
	})
	p := h.start(t, &Spec{Size: 3})
	before := p.snap.Load().pids
	victim := before[0]
	if err := p.Tell("crash"); err != nil { // round robin: the first routee
		t.Fatal(err)
	}
	eventually(t, "the crashed routee to be replaced", func() bool {
		s := p.snap.Load()
		return len(s.pids) == 3 && s.pids[0] != victim
	})
	after := p.snap.Load().pids
	if after[1] != before[1] || after[2] != before[2] {
		t.Error("the other routees must be untouched")
	}
	if h.node.Alive(victim) {
		t.Error("the crashed routee is still alive")
	}
	for i := 0; i < 30; i++ {
		if _, _, err := p.Ask(i, time.Second); err != nil {
			t.Fatalf("ask after restart: %v", err)
		}
	}
	if p.Size() != 3 {
		t.Errorf("size %d", p.Size())
	}
	if v := counterValue(t, h.env.Metrics, "router_pool_routee_restarts_total", map[string]string{"pool": "app:pool"}); v != 1 {
		t.Errorf("restarts metric %v", v)
	}
}

func TestRouteesStopWithPool(t *testing.T) {
	h := newHarness(t)
	echoRoutee(h, nil)
	p := h.start(t, &Spec{Size: 3})
	pids := p.snap.Load().pids
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if h.node.Alive(pid) {
			t.Errorf("routee %s outlived its pool", pid)
		}
	}
	if h.node.Alive(p.PID()) {
		t.Error("pool still alive")
	}
	if err := p.Tell(1); !errors.Is(err, ErrStopped) {
		t.Errorf("tell after stop: %v", err)
	}
	if h.node.Count() != 0 {
		t.Errorf("%d processes left", h.node.Count())
	}
}

// A killed pool runs no teardown; the links still take its routees down.
func TestKilledPoolTakesRouteesDown(t *testing.T) {
	h := newHarness(t)
	echoRoutee(h, nil)
	p := h.start(t, &Spec{Size: 3})
	pids := p.snap.Load().pids
	if err := h.node.Kill(p.PID()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "linked routees to exit", func() bool {
		for _, pid := range pids {
			if h.node.Alive(pid) {
				return false
			}
		}
		return true
	})
}

func TestStartFailsWhenRouteesCannotSpawn(t *testing.T) {
	h := newHarness(t)
	h.routee("app:worker", func() process.Behavior { return &replica{} })
	h.reg.failSpawn.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Start(ctx, h.env, "app:pool", &Spec{Routee: "app:worker", Size: 2, Strategy: RoundRobin, Timeout: time.Second}, registry.StartOptions{})
	if err == nil || !strings.Contains(err.Error(), "pool app:pool") || !strings.Contains(err.Error(), "spawn routee app:worker") {
		t.Fatalf("err %v", err)
	}
	eventually(t, "no process left", func() bool { return h.node.Count() == 0 })
	// Two routees spawned, the third fails: the two are stopped again.
	h.reg.failSpawn.Store(false)
	h.reg.failAfter.Store(2)
	_, err = Start(ctx, h.env, "app:pool", &Spec{Routee: "app:worker", Size: 3, Strategy: RoundRobin, Timeout: time.Second}, registry.StartOptions{})
	if err == nil {
		t.Fatal("started with a routee missing")
	}
	if h.reg.spawned.Load() != 2 {
		t.Fatalf("%d spawned (%v)", h.reg.spawned.Load(), err)
	}
	eventually(t, "the spawned routees stopped", func() bool { return h.node.Count() == 0 })
	if _, err := Start(ctx, h.env, "app:pool", &Spec{Routee: "app:worker", Strategy: RoundRobin, Timeout: time.Second}, registry.StartOptions{}); value.KindOf(err) != value.KindInvalid {
		t.Errorf("size 0 without resizer: %v", err)
	}
}

func TestShrinkNeverDropsAcceptedMessages(t *testing.T) {
	h := newHarness(t)
	var done atomic.Int64
	h.routee("app:worker", func() process.Behavior { return &worker{work: 2 * time.Millisecond, done: &done} })
	p := h.start(t, &Spec{Size: 6})
	const n = 120
	for i := 0; i < n; i++ {
		if err := p.Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	removed := p.snap.Load().pids[1:]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, err := p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: &Spec{Routee: "app:worker", Size: 1, Strategy: RoundRobin, Timeout: DefaultTimeout}})
	if err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if p.Size() != 1 {
		t.Fatalf("size %d after update", p.Size())
	}
	eventually(t, "every accepted message processed", func() bool { return done.Load() == n })
	eventually(t, "removed routees stopped once idle", func() bool {
		for _, pid := range removed {
			if h.node.Alive(pid) {
				return false
			}
		}
		return true
	})
	if v := counterValue(t, h.env.Metrics, "router_pool_resizes_total", map[string]string{"pool": "app:pool", "direction": "down"}); v != 1 {
		t.Errorf("resizes metric %v", v)
	}
}

func TestUpdateInPlace(t *testing.T) {
	h := newHarness(t)
	echoRoutee(h, nil)
	p := h.start(t, &Spec{Size: 2, Strategy: TailChopping, Timeout: time.Second, Interval: 5 * time.Millisecond})
	pid := p.PID()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	next := &Spec{Routee: "app:worker", Size: 4, Strategy: TailChopping, Timeout: 2 * time.Second, Interval: 7 * time.Millisecond}
	ok, err := p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: next})
	if err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	c := p.cfg.Load()
	if p.Size() != 4 || c.timeout != 2*time.Second || c.interval != 7*time.Millisecond || p.PID() != pid {
		t.Errorf("size %d timeout %s interval %s", p.Size(), c.timeout, c.interval)
	}
	// Adding a resizer in place: bounds 1..3 bring 4 down to 3.
	rs := DefaultResizerSpec()
	rs.UpperBound = 3
	next = &Spec{Routee: "app:worker", Size: 4, Strategy: TailChopping, Timeout: 2 * time.Second, Interval: 7 * time.Millisecond, Resizer: &rs}
	if ok, err := p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: next}); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if p.Size() != 3 {
		t.Errorf("size %d with upper bound 3", p.Size())
	}
	v := p.View().(View)
	if v.Resizer == nil || v.Resizer.UpperBound != 3 || v.Size != 3 || len(v.Routees) != 3 || v.Strategy != "tail_chopping" {
		t.Errorf("view %+v", v)
	}
	// A new strategy or routee needs a restart.
	ok, err = p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: &Spec{Routee: "app:worker", Size: 2, Strategy: Random, Timeout: time.Second}})
	if err != nil || ok {
		t.Errorf("strategy change applied in place: %v %v", ok, err)
	}
	ok, err = p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: &Spec{Routee: "app:other", Size: 2, Strategy: TailChopping, Timeout: time.Second, Interval: time.Millisecond}})
	if err != nil || ok {
		t.Errorf("routee change applied in place: %v %v", ok, err)
	}
}

func TestFind(t *testing.T) {
	h := newHarness(t)
	echoRoutee(h, nil)
	p := h.start(t, &Spec{Size: 1})
	if got, err := registry.Find[*Pool](h.env, "pool", "app:pool", KindName); err != nil || got != p {
		t.Errorf("find: %v %v", got, err)
	}
	if _, err := registry.Find[*Pool](h.env, "pool", "app:worker", KindName); value.KindOf(err) != value.KindInvalid {
		t.Errorf("a process.lua entry: %v", err)
	}
	if _, err := registry.Find[*Pool](h.env, "pool", "app:nope"); value.KindOf(err) != value.KindNotFound {
		t.Errorf("missing: %v", err)
	}
}

func TestNewRouteeDefinitionRenewsRoutees(t *testing.T) {
	h := newHarness(t)
	var done atomic.Int64
	h.routee("app:worker", func() process.Behavior { return &worker{work: 2 * time.Millisecond, done: &done} })
	spec := &Spec{Routee: "app:worker", Size: 3, Strategy: RoundRobin, Timeout: DefaultTimeout, Interval: DefaultInterval}
	p := h.start(t, spec)
	const n = 90
	for i := 0; i < n; i++ {
		if err := p.Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	before := append([]process.PID(nil), p.snap.Load().pids...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// The same pool entry and the same routee definition: nothing moves.
	if ok, err := p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: spec}); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if got := p.snap.Load().pids; fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("routees changed without a new definition: %v -> %v", before, got)
	}

	// A reload changed the routee's source: its entry has a new digest.
	h.reg.mu.Lock()
	h.reg.entries["app:worker"] = &registry.Entry{ID: "app:worker", Kind: "process.lua", Digest: "new source"}
	h.reg.mu.Unlock()
	if ok, err := p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: spec}); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	after := p.snap.Load().pids
	if len(after) != 3 {
		t.Fatalf("%d routees after renewal", len(after))
	}
	for _, pid := range after {
		for _, old := range before {
			if pid == old {
				t.Fatalf("routee %s was not renewed", pid)
			}
		}
	}
	eventually(t, "every accepted message processed", func() bool { return done.Load() == n })
	eventually(t, "old routees stopped once idle", func() bool {
		for _, pid := range before {
			if h.node.Alive(pid) {
				return false
			}
		}
		return true
	})
	if v := counterValue(t, h.env.Metrics, "router_pool_routee_renewals_total", map[string]string{"pool": "app:pool"}); v != 3 {
		t.Errorf("renewals metric %v", v)
	}
}

// A routee whose renewal failed keeps running its old definition and is
// renewed by the next Refresh (the runtime refreshes after every reload
// that changed a definition); routees are spawned managed, so the runtime
// does not count them as outdated.
func TestRefreshRenewsRouteesLeftOnAnOldDefinition(t *testing.T) {
	h := newHarness(t)
	var managed atomic.Int64
	h.routee("app:worker", func() process.Behavior { return &worker{} })
	inner := h.env.Entries
	h.env.Entries = managedCounter{inner, &managed}
	spec := &Spec{Routee: "app:worker", Size: 3, Strategy: RoundRobin, Timeout: DefaultTimeout, Interval: DefaultInterval}
	p := h.start(t, spec)
	before := append([]process.PID(nil), p.snap.Load().pids...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.snap.Load().pids; fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("a refresh with no new definition renewed routees: %v -> %v", before, got)
	}
	h.reg.mu.Lock()
	h.reg.entries["app:worker"] = &registry.Entry{ID: "app:worker", Kind: "process.lua", Digest: "v2"}
	h.reg.mu.Unlock()
	// Only one more spawn succeeds: two slots keep their old routees.
	h.reg.failAfter.Store(h.reg.spawned.Load() + 1)
	if ok, err := p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: spec}); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	kept := 0
	for _, pid := range p.snap.Load().pids {
		for _, old := range before {
			if pid == old {
				kept++
			}
		}
	}
	if kept != 2 {
		t.Fatalf("%d old routees kept, want 2", kept)
	}
	h.reg.failAfter.Store(0)
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pid := range p.snap.Load().pids {
		for _, old := range before {
			if pid == old {
				t.Fatalf("routee %s still on the old definition after Refresh", pid)
			}
		}
	}
	if n := h.reg.spawned.Load(); managed.Load() != n {
		t.Fatalf("%d of %d spawns managed", managed.Load(), n)
	}
}

// managedCounter counts the spawns that say Managed.
type managedCounter struct {
	registry.Lookup
	n *atomic.Int64
}

func (m managedCounter) Spawn(id registry.ID, opts registry.SpawnOptions) (process.PID, error) {
	pid, err := m.Lookup.Spawn(id, opts)
	if err == nil && opts.Managed {
		m.n.Add(1)
	}
	return pid, err
}

// A stop that comes while routees are renewed ends the renewal quietly:
// the spawns that fail because of it are not reported as failed renewals.
func TestStopDuringRenewalIsNotAFailure(t *testing.T) {
	h := newHarness(t)
	h.routee("app:worker", func() process.Behavior { return &worker{} })
	spec := &Spec{Routee: "app:worker", Size: 3, Strategy: RoundRobin, Timeout: DefaultTimeout, Interval: DefaultInterval}
	p := h.start(t, spec)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.reg.mu.Lock()
	h.reg.entries["app:worker"] = &registry.Entry{ID: "app:worker", Kind: "process.lua", Digest: "v2"}
	h.reg.mu.Unlock()
	// The first renewal's spawn finds the pool stopping, and fails as a
	// spawn does when the node shuts down.
	h.reg.beforeSpawn = func() { p.stopping.Store(true) }
	h.reg.failSpawn.Store(true)
	if _, err := p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: spec}); err != nil && !errors.Is(err, ErrStopped) {
		t.Fatalf("update: %v", err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.logs.String(), "renewing a routee failed") {
		t.Fatalf("a renewal cut short by the stop was logged as failed:\n%s", h.logs.String())
	}
	if v := counterValue(t, h.env.Metrics, "router_pool_routee_renewal_failures_total", map[string]string{"pool": "app:pool"}); v > 0 {
		t.Errorf("renewal failures metric %v", v)
	}
}

// A reload that changes a pool's size calls the pool once: Update applies
// it (renewing what runs an old definition), and the runtime's Refresh
// that follows finds every routee on the definition in force and does not
// call the pool's process again. Here the process is parked inside a
// command when Refresh comes: a Refresh that called it would wait.
func TestReloadOfSizeCallsThePoolOnce(t *testing.T) {
	h := newHarness(t)
	h.routee("app:worker", func() process.Behavior { return &worker{} })
	p := h.start(t, &Spec{Routee: "app:worker", Size: 2, Strategy: RoundRobin})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	next := &Spec{Routee: "app:worker", Size: 3, Strategy: RoundRobin, Timeout: DefaultTimeout, Interval: DefaultInterval}
	if ok, err := p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: next}); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	entered, gate := make(chan struct{}), make(chan struct{})
	parked := make(chan error, 1)
	go func() { parked <- p.call(ctx, func() { close(entered); <-gate }) }()
	<-entered
	defer func() {
		close(gate)
		if err := <-parked; err != nil {
			t.Error(err)
		}
	}()
	rctx, rcancel := context.WithTimeout(ctx, time.Second)
	defer rcancel()
	if err := p.Refresh(rctx); err != nil {
		t.Fatalf("Refresh after a reload of the size called the pool again: %v", err)
	}
	// (A definition the routees do not run yet still calls it: see
	// TestRefreshRenewsRouteesLeftOnAnOldDefinition.)
}

// The pool relies on the Template to link and monitor each routee from
// its start (SpawnOptions.LinkTo and MonitorBy): it links and monitors
// nothing again after the spawn.
func TestRouteesAreSpawnedLinkedAndMonitored(t *testing.T) {
	h := newHarness(t)
	h.routee("app:worker", func() process.Behavior { return &worker{} })
	var seen []process.SpawnOptions
	var mu sync.Mutex
	inner := h.env.Entries
	h.env.Entries = spawnRecorder{inner, func(o registry.SpawnOptions) {
		mu.Lock()
		seen = append(seen, o.SpawnOptions)
		mu.Unlock()
	}}
	p := h.start(t, &Spec{Routee: "app:worker", Size: 2, Strategy: RoundRobin})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d spawns", len(seen))
	}
	for _, o := range seen {
		if o.LinkTo != p.PID() || o.MonitorBy != p.PID() {
			t.Errorf("spawned with %+v, want linked to and monitored by %s", o, p.PID())
		}
	}
}

// spawnRecorder is a registry.Lookup that reports every Spawn's options.
type spawnRecorder struct {
	registry.Lookup
	saw func(registry.SpawnOptions)
}

func (r spawnRecorder) Spawn(id registry.ID, opts registry.SpawnOptions) (process.PID, error) {
	r.saw(opts)
	return r.Lookup.Spawn(id, opts)
}
