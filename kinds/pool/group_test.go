package pool

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

func TestDecodeGroup(t *testing.T) {
	var doc = func(src string) []error {
		t.Helper()
		_, errs := decodeWith(t, GroupKind{}, src)
		return errs
	}
	if errs := doc("scope: pg\ngroup: indexers\nstrategy: scatter_gather_first_completed\ntimeout: 2s"); len(errs) != 0 {
		t.Fatal(errs)
	}
	s, _ := decodeWith(t, GroupKind{}, "scope: pg\ngroup: g")
	gs := s.(*GroupSpec)
	if gs.Scope != "app:pg" || gs.Strategy != RoundRobin || gs.Timeout != DefaultTimeout {
		t.Errorf("%+v", gs)
	}
	for src, want := range map[string]string{
		"group: g":  "scope: required",
		"scope: pg": "group: required",
		"scope: pg\ngroup: g\nstrategy: smallest_mailbox": `strategy: unknown value "smallest_mailbox"`,
		"scope: pg\ngroup: g\ntimeout: 0":                 "timeout: must be a positive",
		"scope: pg\ngroup: g\nsize: 3":                    "size: unknown field",
	} {
		errs := doc(src)
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e.Error(), want)
		}
		if !found {
			t.Errorf("%q: no error %q in %v", src, want, errs)
		}
	}
}

type groupHarness struct {
	*harness
	scope *pgscope.Scope
}

func newGroupHarness(t *testing.T) *groupHarness {
	h := newHarness(t)
	s, err := pgscope.New(h.env, "app:pg", pgscope.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	h.reg.mu.Lock()
	h.reg.instances["app:pg"] = s
	h.reg.entries["app:pg"] = &registry.Entry{ID: "app:pg", Kind: pgscope.KindName}
	h.reg.mu.Unlock()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	return &groupHarness{harness: h, scope: s}
}

// member spawns a routee and joins it to group.
func (h *groupHarness) member(t *testing.T, b process.Behavior, group string) process.PID {
	t.Helper()
	pid, err := h.node.Spawn(b, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.node.Stop(context.Background(), pid) })
	if err := h.scope.Join(pid, group); err != nil {
		t.Fatal(err)
	}
	return pid
}

func (h *groupHarness) startGroup(t *testing.T, spec *GroupSpec) *Group {
	t.Helper()
	return h.startGroupNamed(t, "app:search", spec)
}

func (h *groupHarness) startGroupNamed(t *testing.T, id registry.ID, spec *GroupSpec) *Group {
	t.Helper()
	if spec.Scope == "" {
		spec.Scope = "app:pg"
	}
	if spec.Timeout == 0 {
		spec.Timeout = DefaultTimeout
	}
	if spec.Strategy == "" {
		spec.Strategy = RoundRobin
	}
	g, err := StartGroup(context.Background(), h.env, id, spec, registry.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.reg.mu.Lock()
	h.reg.instances[id] = g
	h.reg.mu.Unlock()
	t.Cleanup(func() { _ = g.Stop(context.Background()) })
	return g
}

func TestGroupRoundRobinOverMembers(t *testing.T) {
	h := newGroupHarness(t)
	got := make(chan process.PID, 100)
	a := h.member(t, &replica{log: got}, "indexers")
	b := h.member(t, &replica{log: got}, "indexers")
	if err := h.scope.Join(a, "indexers"); err != nil { // a second join: still one routee
		t.Fatal(err)
	}
	h.member(t, &replica{log: got}, "other")
	g := h.startGroup(t, &GroupSpec{Group: "indexers"})
	eventually(t, "two members", func() bool { return g.Size() == 2 })
	for i := 0; i < 10; i++ {
		if err := g.Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[process.PID]int{}
	for i := 0; i < 10; i++ {
		counts[<-got]++
	}
	if counts[a] != 5 || counts[b] != 5 {
		t.Errorf("counts %v", counts)
	}
	// Through the group's registered name, too.
	v, from, err := h.node.Ask(g.PID(), process.Message{Payload: "k"}, time.Second)
	if err != nil || (from != a && from != b) || !strings.Contains(fmt.Sprint(v), ":k") {
		t.Fatalf("%v %v %v", v, from, err)
	}
	<-got
	if pid, ok := h.node.Whereis("app:search"); !ok || pid != g.PID() {
		t.Error("the group is registered under its entry ID")
	}
	if err := h.scope.Leave(a, "indexers", "indexers"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a gone", func() bool { return g.Size() == 1 })
	for i := 0; i < 4; i++ {
		if _, from, err := g.Ask(i, time.Second); err != nil || from != b {
			t.Fatalf("after leave: %v %v", from, err)
		}
	}
	v2 := g.View().(GroupView)
	if v2.Group != "indexers" || len(v2.Members) != 1 || v2.Members[0] != b.String() {
		t.Errorf("view %+v", v2)
	}
}

func TestGroupScatterGather(t *testing.T) {
	h := newGroupHarness(t)
	h.member(t, &replica{name: "slow", delay: fixed(60 * time.Millisecond)}, "replicas")
	fast := h.member(t, &replica{name: "fast", delay: fixed(2 * time.Millisecond)}, "replicas")
	g := h.startGroup(t, &GroupSpec{Group: "replicas", Strategy: ScatterGather, Timeout: time.Second})
	eventually(t, "members", func() bool { return g.Size() == 2 })
	v, from, err := g.Ask("user-42", 0)
	if err != nil || v != "fast:user-42" || from != fast {
		t.Fatalf("%v %v %v", v, from, err)
	}
	if err := g.Tell("nobody listens"); err != nil {
		t.Fatal(err)
	}
	if n := counterValue(t, h.env.Metrics, "router_scatter_gather_resolved_total", map[string]string{"outcome": OutcomeNoReplyTarget}); n != 1 {
		t.Errorf("no-reply-target %v", n)
	}
	// An empty group: nobody to scatter to.
	g2, err := StartGroup(context.Background(), h.env, "app:empty", &GroupSpec{Scope: "app:pg", Group: "none", Strategy: ScatterGather, Timeout: time.Second}, registry.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g2.Stop(context.Background()) }()
	_, _, err = g2.Ask("x", 0)
	if agg := asAggregate(t, err); agg.Message != msgNoRoutees || len(agg.Errors) != 0 {
		t.Fatal(agg)
	}
	// Failing members: one aggregate.
	h.member(t, &replica{fail: value.NewError(value.KindNotFound, "miss")}, "broken")
	h.member(t, &replica{fail: value.NewError(value.KindNotFound, "miss")}, "broken")
	g3, err := StartGroup(context.Background(), h.env, "app:broken", &GroupSpec{Scope: "app:pg", Group: "broken", Strategy: ScatterGather, Timeout: time.Second}, registry.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g3.Stop(context.Background()) }()
	_, _, err = g3.Ask("x", 0)
	if agg := asAggregate(t, err); agg.Message != "all 2 routees failed" || len(agg.Errors) != 2 {
		t.Fatal(agg)
	}
}

func TestGroupStopFailsOpenScatters(t *testing.T) {
	h := newGroupHarness(t)
	h.member(t, &replica{delay: fixed(time.Hour)}, "replicas")
	g := h.startGroup(t, &GroupSpec{Group: "replicas", Strategy: ScatterGather, Timeout: time.Hour})
	eventually(t, "member", func() bool { return g.Size() == 1 })
	errc := make(chan error, 1)
	go func() { _, _, err := g.Ask("x", 2*time.Hour); errc <- err }()
	eventually(t, "the scatter open", func() bool { return g.nOpen.Load() == 1 })
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if agg := asAggregate(t, <-errc); agg.Message != msgStopped {
		t.Fatal(agg)
	}
}

func TestGroupConsistentHashAndBroadcast(t *testing.T) {
	h := newGroupHarness(t)
	for i := 0; i < 4; i++ {
		h.member(t, &replica{}, "shards")
	}
	g := h.startGroup(t, &GroupSpec{Group: "shards", Strategy: ConsistentHash})
	eventually(t, "members", func() bool { return g.Size() == 4 })
	_, first, err := g.Ask("alice", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, o, _ := g.Ask(map[string]any{"key": "alice"}, time.Second); o != first {
			t.Fatalf("alice moved to %s", o)
		}
	}
	if _, _, err := g.Ask(true, time.Second); value.KindOf(err) != value.KindInvalid {
		t.Errorf("no key: %v", err)
	}

	got := make(chan process.PID, 10)
	h.member(t, &replica{log: got}, "all")
	h.member(t, &replica{log: got}, "all")
	b, err := StartGroup(context.Background(), h.env, "app:bcast", &GroupSpec{Scope: "app:pg", Group: "all", Strategy: Broadcast, Timeout: time.Second}, registry.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Stop(context.Background()) }()
	eventually(t, "members", func() bool { return b.Size() == 2 })
	if err := b.Tell("hi"); err != nil {
		t.Fatal(err)
	}
	first, second := <-got, <-got
	if first == second {
		t.Error("broadcast reached one member twice")
	}
}

func TestFindRouter(t *testing.T) {
	find := func(env *registry.Env, id string) (Router, error) {
		return registry.Find[Router](env, "router", id, KindName, GroupKindName)
	}
	h := newGroupHarness(t)
	echoRoutee(h.harness, nil)
	p := h.start(t, &Spec{Size: 1})
	g := h.startGroup(t, &GroupSpec{Group: "x"})
	if r, err := find(h.env, "app:pool"); err != nil || r != Router(p) {
		t.Errorf("pool: %v %v", r, err)
	}
	if r, err := find(h.env, "app:search"); err != nil || r != Router(g) {
		t.Errorf("group: %v %v", r, err)
	}
	if _, err := find(h.env, "app:pg"); value.KindOf(err) != value.KindInvalid {
		t.Errorf("a scope: %v", err)
	}
	if _, err := find(h.env, "app:none"); value.KindOf(err) != value.KindNotFound {
		t.Errorf("missing: %v", err)
	}
}

// A group routes over the scope's shared list of distinct members: routing
// a message copies nothing, and the consistent-hash ring is built once per
// version of the group.
func TestGroupRoutesWithoutCopying(t *testing.T) {
	h := newGroupHarness(t)
	idle := func() process.PID {
		pid, err := h.node.SpawnFunc(func(p *process.Proc) (any, error) { <-p.Context().Done(); return nil, nil }, process.SpawnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = h.node.Stop(context.Background(), pid) })
		if err := h.scope.Join(pid, "g", "g"); err != nil {
			t.Fatal(err)
		}
		return pid
	}
	idle()
	idle()
	g := h.startGroup(t, &GroupSpec{Group: "g", Strategy: ConsistentHash})
	first := g.ring(h.scope.SharedDistinctMembers("g"))
	for i := range 10 {
		if err := g.Tell(map[string]any{"key": i}); err != nil {
			t.Fatal(err)
		}
	}
	if g.ring(h.scope.SharedDistinctMembers("g")) != first {
		t.Fatal("ring rebuilt for an unchanged group")
	}
	idle()
	if g.ring(h.scope.SharedDistinctMembers("g")) == first {
		t.Fatal("ring kept after the group changed")
	}
	if raceEnabled {
		return // sync.Pool drops items at random under the race detector
	}
	rr := h.startGroupNamed(t, "app:rr", &GroupSpec{Group: "g"})
	m := process.Message{Topic: Topic, Payload: "static"}
	if a := testing.AllocsPerRun(1000, func() { _ = rr.Route(m) }); a != 0 {
		t.Fatalf("a routed message allocates %v times", a)
	}
}
