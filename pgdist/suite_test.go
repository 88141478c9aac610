package pgdist

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
)

// The cluster cases of OTP's pg_SUITE, ported to in-process clusters.

// two: two nodes see each other's joins, but not as local; an exit on one
// leaves the other.
func TestTwo(t *testing.T) {
	pc := newPGCluster(t, nil, "n1", "n2")
	p := pc.spawn("n1")
	pc.join(p, "two")
	if got := pc.scope("n1").GetLocalMembers("two"); !slices.Equal(got, copies(p, 1)) {
		t.Fatalf("local members on n1: %v", got)
	}
	pc.waitMembers("two", copies(p, 1), "n1", "n2")
	if got := pc.scope("n2").GetLocalMembers("two"); len(got) != 0 {
		t.Fatalf("n2 holds n1's member as local: %v", got)
	}
	if got := pc.scope("n2").WhichLocalGroups(); len(got) != 0 {
		t.Fatalf("n2's local groups: %v", got)
	}
	pc.kill(p)
	pc.waitMembers("two", nil, "n1", "n2")

	p2, p3 := pc.spawn("n2"), pc.spawn("n2")
	pc.join(p2, "two")
	pc.join(p3, "two")
	pc.waitMembers("two", []process.PID{p2, p3}, "n1", "n2")
}

// initial: joins made before the nodes connect reach the node that joins
// later (a node that joins gets a full sync), and leave it again on exit.
func TestInitial(t *testing.T) {
	pc := newPGCluster(t, nil, "n1")
	p := pc.spawn("n1")
	pc.join(p, "initial")
	pc.start("n2")
	pc.c.Converged()
	pc.waitMembers("initial", copies(p, 1), "n1", "n2")
	if got := pc.scope("n2").GetLocalMembers("initial"); len(got) != 0 {
		t.Fatalf("n2 holds n1's member as local: %v", got)
	}
	pc.kill(p)
	pc.waitMembers("initial", nil, "n1", "n2")
}

// double: a join before the peer exists and one after both arrive, with
// their multiplicity.
func TestDouble(t *testing.T) {
	pc := newPGCluster(t, nil, "n1")
	p := pc.spawn("n1")
	pc.join(p, "double")
	pc.start("n2")
	pc.join(p, "double")
	pc.c.Converged()
	pc.waitMembers("double", copies(p, 2), "n1", "n2")
}

// group_leave: 16 remote joins of one process and 4 leaves leave 12
// copies; the node going down leaves none.
func TestGroupLeave(t *testing.T) {
	pc := newPGCluster(t, nil, "n1", "n2")
	p := pc.spawn("n2")
	groups := make([]string, 16)
	for i := range groups {
		groups[i] = "two"
	}
	pc.join(p, groups...)
	pc.leave(p, groups[:4]...)
	pc.waitMembers("two", copies(p, 12), "n1", "n2")
	pc.stop("n2")
	pc.waitMembers("two", nil, "n1")
}

// scope_restart: a restarted scope keeps only the remote members (its
// local members died with it) and re-syncs; the other node drops the old
// scope's members and sees the new one's.
func TestScopeRestart(t *testing.T) {
	pc := newPGCluster(t, nil, "n1", "n2")
	p := pc.spawn("n1")
	pc.join(p, "scope_restart", "scope_restart")
	r := pc.spawn("n2")
	pc.join(r, "scope_restart")
	pc.waitMembers("scope_restart", []process.PID{p, p, r}, "n1", "n2")
	pc.stopScope("n1")
	pc.waitMembers("scope_restart", copies(r, 1), "n2")
	pc.startScope("n1")
	pc.waitMembers("scope_restart", copies(r, 1), "n1", "n2")
	// The restarted scope's members reach the other node again.
	q := pc.spawn("n1")
	pc.join(q, "scope_restart")
	pc.waitMembers("scope_restart", []process.PID{q, r}, "n1", "n2")
}

// netsplit: both sides of a partition change their members meanwhile;
// after the heal both converge to the exact membership, multiplicity
// kept.
func TestNetsplit(t *testing.T) {
	pc := newPGCluster(t, nil, "n1", "n2")
	old := pc.spawn("n2")
	pc.join(old, "$invisible")
	pc.waitMembers("$invisible", copies(old, 1), "n1", "n2")

	pc.c.Faults.Partition([]string{"n1"}, []string{"n2"})
	pc.c.Sees("n1")
	pc.c.Sees("n2")
	// Each side dropped the other's members.
	pc.waitMembers("$invisible", nil, "n1")
	remote := pc.spawn("n2")
	pc.join(remote, "netsplit", "netsplit")
	pc.leave(old, "$invisible")
	pc.join(old, "$visible")
	local := pc.spawn("n1")
	pc.join(local, "netsplit")

	pc.c.Faults.HealAll()
	pc.c.Converged()
	pc.waitMembers("netsplit", []process.PID{remote, remote, local}, "n1", "n2")
	pc.waitMembers("$visible", copies(old, 1), "n1", "n2")
	pc.waitMembers("$invisible", nil, "n1", "n2")
}

// trisplit: three nodes, each cut off from both others, change their
// members; after the heal all three hold the same.
func TestTrisplit(t *testing.T) {
	names := []string{"n1", "n2", "n3"}
	pc := newPGCluster(t, nil, names...)
	var before []process.PID
	for _, n := range names {
		p := pc.spawn(n)
		pc.join(p, "three")
		before = append(before, p)
	}
	pc.waitMembers("three", before, names...)

	f := pc.c.Faults
	f.Partition([]string{"n1"}, []string{"n2", "n3"})
	f.Partition([]string{"n2"}, []string{"n3"})
	for _, n := range names {
		pc.c.Sees(n)
	}
	for i, n := range names {
		pc.waitMembers("three", before[i:i+1], n)
	}
	// During the split: n1 leaves, n2 joins once more, n3 adds a process.
	pc.leave(before[0], "three")
	pc.join(before[1], "three")
	extra := pc.spawn("n3")
	pc.join(extra, "three", "one")

	f.HealAll()
	pc.c.Converged()
	want := []process.PID{before[1], before[1], before[2], extra}
	pc.waitMembers("three", want, names...)
	pc.waitMembers("one", copies(extra, 1), names...)
}

// A node that goes down (here: cut off for good, as a crash looks to the
// others) has its members removed on every other node, with member.left
// events, within the failure detection's time.
func TestNodeDownEmptiesItsMembers(t *testing.T) {
	names := []string{"n1", "n2", "n3"}
	pc := newPGCluster(t, nil, names...)
	p := pc.spawn("n3")
	pc.join(p, "g", "g")
	pc.waitMembers("g", copies(p, 2), names...)
	sub, members, err := pc.scope("n1").Monitor(process.PID{}, "g")
	if err != nil || len(members) != 2 {
		t.Fatalf("monitor: %v %v", members, err)
	}
	defer sub.Close(true)

	start := time.Now()
	pc.c.Faults.Partition([]string{"n3"}, []string{"n1", "n2"})
	pc.waitMembers("g", nil, "n1", "n2")
	t.Logf("members of the cut-off node gone from both others after %s", time.Since(start))
	select {
	case ev := <-sub.C():
		if ev.Kind != pgscope.MemberLeft || !slices.Equal(ev.PIDs, copies(p, 2)) {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no member.left event")
	}
}

// expect reads the next events of sub and compares them with want.
func expect(t *testing.T, sub *pgscope.Subscription, want ...pgscope.Event) {
	t.Helper()
	for i, w := range want {
		select {
		case ev := <-sub.C():
			if ev.Kind != w.Kind || ev.Group != w.Group || !slices.Equal(ev.PIDs, w.PIDs) {
				t.Fatalf("event %d: %s %s %v, want %s %s %v", i, ev.Kind, ev.Group, ev.PIDs, w.Kind, w.Group, w.PIDs)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("event %d: none, want %s %s %v", i, w.Kind, w.Group, w.PIDs)
		}
	}
}

// Monitors on other nodes see the same sequence of events as one on the
// member's node: joins with their multiplicity, leaves, one left per copy
// at exit, and nothing for what changed nothing.
func TestMonitorEventsAcrossNodes(t *testing.T) {
	names := []string{"n1", "n2", "n3"}
	pc := newPGCluster(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 50 * time.Millisecond }, names...)
	// Until the scopes have found each other, a change reaches a peer as
	// part of a later full state, which carries no intermediate events.
	pc.waitPeered(names...)
	var subs []*pgscope.Subscription
	for _, n := range names {
		sub, members, err := pc.scope(n).Monitor(process.PID{}, "g")
		if err != nil || len(members) != 0 {
			t.Fatalf("monitor on %s: %v %v", n, members, err)
		}
		defer sub.Close(true)
		subs = append(subs, sub)
	}
	scopeSub, snap, err := pc.scope("n3").Events(process.PID{})
	if err != nil || len(snap) != 0 {
		t.Fatalf("events: %v %v", snap, err)
	}
	defer scopeSub.Close(true)

	p := pc.spawn("n1")
	pc.join(p, "g", "g")
	pc.leave(p, "g")
	pc.join(p, "h")
	pc.kill(p)
	joined := func(g string, pids ...process.PID) pgscope.Event {
		return pgscope.Event{Kind: pgscope.MemberJoined, Group: g, PIDs: pids}
	}
	left := func(g string, pids ...process.PID) pgscope.Event {
		return pgscope.Event{Kind: pgscope.MemberLeft, Group: g, PIDs: pids}
	}
	for _, sub := range subs {
		expect(t, sub, joined("g", p, p), left("g", p), left("g", p))
	}
	expect(t, scopeSub, joined("g", p, p), left("g", p), joined("h", p), left("g", p), left("h", p))

	// Full syncs that change nothing (anti-entropy runs every 50ms here)
	// raise no event.
	q := pc.spawn("n2")
	pc.join(q, "g")
	for _, sub := range subs {
		expect(t, sub, joined("g", q))
	}
	before := pc.scope("n1").EventCount()
	time.Sleep(500 * time.Millisecond)
	for i, sub := range subs {
		select {
		case ev := <-sub.C():
			t.Fatalf("%s: event %+v from syncs that changed nothing", names[i], ev)
		default:
		}
	}
	if after := pc.scope("n1").EventCount(); after != before {
		t.Fatalf("%d events from syncs that changed nothing", after-before)
	}
	if n := counter(t, pc.node("n1").reg, "pg_cluster_messages_received_total", map[string]string{"type": "sync"}); n == 0 {
		t.Fatal("no anti-entropy sync was received")
	}
}

// broadcast reaches every member on every node once, however often it
// joined; broadcast_local only this node's.
func TestBroadcastAcrossNodes(t *testing.T) {
	names := []string{"n1", "n2", "n3"}
	pc := newPGCluster(t, nil, names...)
	var members []process.PID
	got := map[process.PID]chan process.Message{}
	for _, n := range names {
		ch := make(chan process.Message, 16)
		pid, err := pc.node(n).cl.Node().Spawn(mailbox{ch}, process.SpawnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pc.node(n).procs = append(pc.node(n).procs, pid)
		got[pid] = ch
		pc.join(pid, "b", "b")
		members = append(members, pid, pid)
	}
	pc.waitMembers("b", members, names...)
	sender := pc.spawn("n1")
	n, err := pc.scope("n1").Broadcast(sender, "b", "hi", "there")
	if err != nil || n != 3 {
		t.Fatalf("broadcast reached %d: %v", n, err)
	}
	for pid, ch := range got {
		select {
		case m := <-ch:
			if m.Topic != "hi" || m.Payload != "there" || m.From != sender {
				t.Fatalf("%s got %+v", pid, m)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s got nothing", pid)
		}
	}
	if n, err := pc.scope("n2").BroadcastLocal(sender, "b", "hi", nil); err != nil || n != 1 {
		t.Fatalf("broadcast_local reached %d: %v", n, err)
	}
	time.Sleep(100 * time.Millisecond)
	for pid, ch := range got {
		if len(ch) != 0 && pid.Node != "n2" {
			t.Fatalf("%s got a second copy", pid)
		}
	}
}

// mailbox is a member process that hands its messages to a channel.
type mailbox struct{ ch chan process.Message }

func (b mailbox) Receive(_ process.Context, m process.Message) { b.ch <- m }

// Only local processes join: a PID of another node is an error (OTP's
// nolocal), through the scope of any node but its own.
func TestRemotePIDCannotJoin(t *testing.T) {
	pc := newPGCluster(t, nil, "n1", "n2")
	remote := pc.spawn("n2")
	for _, g := range [][]string{{"g"}, {"g", "h"}} {
		if err := pc.scope("n1").Join(remote, g...); !errors.Is(err, pgscope.ErrNotLocal) {
			t.Fatalf("join of a remote PID: %v", err)
		}
	}
	if err := pc.scope("n1").Leave(remote, "g"); !errors.Is(err, pgscope.ErrNotLocal) {
		t.Fatalf("leave of a remote PID: %v", err)
	}
	if got := pc.scope("n1").WhichGroups(); len(got) != 0 {
		t.Fatalf("groups after refused joins: %v", got)
	}
}
