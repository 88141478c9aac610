package pgdist

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/kinds/pool"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// entries resolves the scope of a node for a router.group (registry.Find).
type entries struct{ scope func() *pgscope.Scope }

func (e entries) Entry(id registry.ID) (*registry.Entry, bool) {
	if id != scopeID {
		return nil, false
	}
	return &registry.Entry{ID: scopeID, Kind: pgscope.KindName}, true
}

func (e entries) Instance(id registry.ID) (registry.Instance, bool) {
	if id != scopeID {
		return nil, false
	}
	return e.scope(), true
}

func (entries) Spawn(registry.ID, registry.SpawnOptions) (process.PID, error) {
	return process.PID{}, errors.New("no templates here")
}

// group starts a router.group named id on node name over the test scope's
// group g.
func (pc *pgCluster) group(name, id, g string, st pool.Strategy, timeout time.Duration) *pool.Group {
	pc.t.Helper()
	n := pc.node(name)
	env := *n.env
	env.Entries = entries{scope: func() *pgscope.Scope { return pc.scope(name) }}
	gr, err := pool.StartGroup(context.Background(), &env, registry.ID(id),
		&pool.GroupSpec{Scope: scopeID, Group: g, Strategy: st, Timeout: timeout}, registry.StartOptions{})
	if err != nil {
		pc.t.Fatal(err)
	}
	pc.t.Cleanup(func() { _ = gr.Stop(context.Background()) })
	return gr
}

// answered asks gr and returns the node and PID of the member that
// answered.
func answered(t *testing.T, gr *pool.Group, payload any) (string, string) {
	t.Helper()
	v, from, err := gr.Ask(payload, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := v.(map[string]any)
	if m == nil || m["pid"] != from.String() {
		t.Fatalf("reply %v attributed to %s", v, from)
	}
	return m["node"].(string), from.String()
}

// router.group routes to the members of a pg group on every node with
// each strategy; the router's node need not have members itself.
func TestRouterGroupAcrossNodes(t *testing.T) {
	names := []string{"n1", "n2", "n3"}
	pc := newPGCluster(t, nil, names...)
	var members []process.PID
	for _, n := range []string{"n2", "n2", "n3"} {
		p := pc.spawn(n)
		pc.join(p, "indexers")
		members = append(members, p)
	}
	pc.join(members[0], "indexers") // twice: still one routee
	pc.waitMembers("indexers", append(slices.Clone(members), members[0]), names...)

	rr := pc.group("n1", "test:rr", "indexers", pool.RoundRobin, 2*time.Second)
	if rr.Size() != 3 {
		t.Fatalf("routees %v", rr.Routees())
	}
	if v := rr.View().(pool.GroupView); !maps.Equal(v.Nodes, map[string]int{"n2": 2, "n3": 1}) {
		t.Fatalf("view: routees by node %v", v.Nodes)
	}
	nodes, pids := map[string]int{}, map[string]int{}
	for range 6 {
		n, p := answered(t, rr, "q")
		nodes[n]++
		pids[p]++
	}
	if nodes["n2"] != 4 || nodes["n3"] != 2 || len(pids) != 3 {
		t.Fatalf("round robin answered by %v %v", nodes, pids)
	}

	random := pc.group("n1", "test:random", "indexers", pool.Random, 2*time.Second)
	for range 10 {
		if _, p := answered(t, random, "q"); pids[p] == 0 {
			t.Fatalf("random chose %s, not a member", p)
		}
	}

	// consistent_hash: one key reaches one member, whichever node routes.
	ch1 := pc.group("n1", "test:ch", "indexers", pool.ConsistentHash, 2*time.Second)
	ch2 := pc.group("n2", "test:ch", "indexers", pool.ConsistentHash, 2*time.Second)
	for i := range 8 {
		key := map[string]any{"key": fmt.Sprintf("k%d", i)}
		_, a := answered(t, ch1, key)
		_, b := answered(t, ch2, key)
		if a != b {
			t.Fatalf("key %d: %s from n1, %s from n2", i, a, b)
		}
	}

	// broadcast: every member, once.
	bc := pc.group("n1", "test:bc", "fans", pool.Broadcast, 2*time.Second)
	seen := make(chan process.Message, 8)
	probe, err := pc.node("n1").cl.Node().Spawn(mailbox{seen}, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.kill(probe)
	var fans []process.PID
	for _, n := range []string{"n2", "n3"} {
		p, err := pc.node(n).cl.Node().Spawn(forward{probe}, process.SpawnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pc.node(n).procs = append(pc.node(n).procs, p)
		pc.join(p, "fans", "fans")
		fans = append(fans, p, p)
	}
	pc.waitMembers("fans", fans, "n1")
	if err := bc.Tell("all"); err != nil {
		t.Fatal(err)
	}
	from := map[process.PID]int{}
	for range 2 {
		select {
		case m := <-seen:
			from[m.From]++
		case <-time.After(10 * time.Second):
			t.Fatalf("broadcast reached %v", from)
		}
	}
	select {
	case m := <-seen:
		t.Fatalf("a second copy from %s", m.From)
	case <-time.After(200 * time.Millisecond):
	}
	if len(from) != 2 || from[fans[0]] != 1 || from[fans[2]] != 1 {
		t.Fatalf("broadcast reached %v", from)
	}
}

// forward hands every message it gets to another process, with itself as
// the sender.
type forward struct{ to process.PID }

func (f forward) Receive(c process.Context, m process.Message) {
	_ = c.Node().Send(f.to, process.Message{From: c.Self(), Topic: m.Topic, Payload: m.Payload})
}

// A scatter/gather across nodes fails with the same aggregate error as on
// one node, on the router's node and, through the wire, on a caller of
// another node.
func TestScatterGatherAcrossNodes(t *testing.T) {
	names := []string{"n1", "n2", "n3"}
	pc := newPGCluster(t, nil, names...)
	// The same three members, on one node ...
	for range 3 {
		pc.join(pc.spawn("n1"), "alone")
	}
	// ... and spread over the other two.
	var spread []process.PID
	for _, n := range []string{"n2", "n3", "n3"} {
		p := pc.spawn(n)
		pc.join(p, "spread")
		spread = append(spread, p)
	}
	pc.waitMembers("spread", spread, names...)
	// The scatter's timeout is what the failing replies must beat (a local
	// ask took over 300 ms at load 17) and what the 2 s sleeps below pass.
	one := pc.group("n1", "test:one", "alone", pool.ScatterGather, time.Second)
	across := pc.group("n1", "test:across", "spread", pool.ScatterGather, time.Second)

	fail := map[string]any{"fail": "miss"}
	_, _, errOne := one.Ask(fail, 5*time.Second)
	_, _, errAcross := across.Ask(fail, 5*time.Second)
	a, b := aggregate(t, errOne), aggregate(t, errAcross)
	if a.Message != "all 3 routees failed" || a.String() != b.String() || !slices.EqualFunc(a.Errors, b.Errors, sameError) {
		t.Fatalf("one node: %s\nacross nodes: %s", a.String(), b.String())
	}

	// A caller on n3 asks the router on n1 by name: the aggregate crosses
	// the wire intact.
	c := process.NewCall()
	m := c.MessageWithin(process.Message{Topic: pool.Topic, Payload: fail}, 5*time.Second)
	if err := pc.node("n3").cl.Node().SendName("n1", "test:across", m); err != nil {
		t.Fatal(err)
	}
	r, err := c.Wait(5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.From.Node != "n1" {
		t.Fatalf("the failure is attributed to %s, want the router on n1", r.From)
	}
	wired := aggregate(t, r.Err)
	_, _, errAcross = across.Ask(fail, 5*time.Second)
	b = aggregate(t, errAcross)
	if wired.Message != "all 3 routees failed" || wired.String() != b.String() || !slices.EqualFunc(wired.Errors, b.Errors, sameError) {
		t.Fatalf("over the wire: %s\non the router's node: %s", wired, b)
	}

	slow := map[string]any{"sleep": "2s"}
	_, _, errOne = one.Ask(slow, 5*time.Second)
	_, _, errAcross = across.Ask(slow, 5*time.Second)
	a, b = aggregate(t, errOne), aggregate(t, errAcross)
	// A member's timeout names its routee; the kinds are the same.
	sameKind := func(x, y *value.Error) bool { return x.Kind == y.Kind && x.Kind == value.KindTimeout }
	if a.Message != "none of 3 routees replied within 1000ms" || a.Message != b.Message || !slices.EqualFunc(a.Errors, b.Errors, sameKind) {
		t.Fatalf("one node: %s\nacross nodes: %s", a.String(), b.String())
	}
}

func aggregate(t *testing.T, err error) *value.Error {
	t.Helper()
	var ve *value.Error
	if !errors.As(err, &ve) || ve.Kind != value.KindAggregate {
		t.Fatalf("want an aggregate error, got %T %v", err, err)
	}
	return ve
}

func sameError(a, b *value.Error) bool { return a.Kind == b.Kind && a.Message == b.Message }
