package pgdist

import (
	"testing"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
)

func (mp *memPG) replica(name string) *replica {
	d := mp.nodes[name].d
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.scopes[scopeID]
}

// TestNoticeOfANodeThatLeftSendsNothing: a node that joins gets the
// broadcasts still queued on its seed, among them the start notices of
// nodes that left before it joined. Such a node is no peer: it is sent
// neither the state the notice asks for nor the changes that follow (they
// were dead letters, "unreachable", on the joiner).
func TestNoticeOfANodeThatLeftSendsNothing(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 }, "n1")
	n1, rep := mp.nodes["n1"], mp.replica("n1")
	if err := n1.s.Join(mp.spawn("n1"), "g"); err != nil {
		t.Fatal(err)
	}
	rep.settle()
	n1.d.gossip("gone", notice(scopeID, nil))
	rep.settle()
	if err := n1.s.Join(mp.spawn("n1"), "g"); err != nil {
		t.Fatal(err)
	}
	rep.settle()
	if v := mp.view("n1", "gone"); v.Node != "" {
		t.Errorf("the departed node is a peer: %+v", v)
	}
	for _, kind := range []string{"sync", "ops"} {
		if n := counter(t, n1.reg, "pg_cluster_messages_sent_total", map[string]string{"type": kind}); n != 0 {
			t.Errorf("%v %s messages sent", n, kind)
		}
	}
	if n := counter(t, n1.reg, "pg_cluster_send_failures_total", nil); n != 0 {
		t.Errorf("%v sends failed", n)
	}
}

// TestNoticeBeforeTheJoin: a start notice that outruns its node's join is
// answered when the join arrives: the node whose name sorts after sends no
// discover on a join, so without the notice the new scope would not get
// its members (anti-entropy is off here).
func TestNoticeBeforeTheJoin(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 }, "n2")
	b := mp.spawn("n2")
	if err := mp.nodes["n2"].s.Join(b, "g"); err != nil {
		t.Fatal(err)
	}
	mp.add("n1", true) // sees nobody: its start asks no one
	rep := mp.replica("n2")
	mp.nodes["n2"].d.gossip("n1", notice(scopeID, nil))
	rep.settle()
	mp.c.see("n2", "n1", true)
	mp.waitMembers("g", []process.PID{b}, "n1")
}
