package pgdist

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
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
	n1.d.gossip("gone", notice(scopeID, nil, process.PID{}))
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
	mp.nodes["n2"].d.gossip("n1", notice(scopeID, nil, process.PID{}))
	rep.settle()
	mp.c.see("n2", "n1", true)
	mp.waitMembers("g", []process.PID{b}, "n1")
}

// TestAskBeforeThePeersScopeRuns: nodes starting together (issue 23). n2
// sees n3 join before its scope starts, so its start sends n3 a discover,
// which reaches n3 before n3's scope runs and is dropped; n3 saw n2 only
// after its own scope started, so its start asks nobody, and its join
// (n3 sorts after n2) asks nothing either. n3's start notice must bring
// the exchange about; anti-entropy is off.
func TestAskBeforeThePeersScopeRuns(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 })
	mp.add("n2", false)
	mp.add("n3", false)
	mp.c.see("n2", "n3", true) // n3 does not see n2 yet
	mp.startScope("n2")
	rep2 := mp.replica("n2")
	testutil.EventuallyWithin(t, 5*time.Second, "n2's probe to find no scope on n3", func() bool {
		return mp.view("n2", "n3").Absent
	})
	b := mp.spawn("n2")
	if err := mp.nodes["n2"].s.Join(b, "g"); err != nil {
		t.Fatal(err)
	}
	rep2.settle()
	mp.startScope("n3")
	rep3 := mp.replica("n3")
	c := mp.spawn("n3")
	if err := mp.nodes["n3"].s.Join(c, "g"); err != nil {
		t.Fatal(err)
	}
	rep3.settle()
	// n3's start notice reaches n2 (the fake's gossip goes only where the
	// sender sees, and n3 does not see n2 yet; memberlist's goes to all).
	mp.nodes["n2"].d.gossip("n3", notice(scopeID, nil, process.PID{}))
	rep2.settle()
	mp.c.see("n3", "n2", true)
	mp.waitMembers("g", []process.PID{b, c}, "n2", "n3")
}

// TestNoticeDuringAProbe: a probe's "no scope" answer made before the
// peer's scope ran, arriving after the peer's start notice, must not mark
// the peer absent: nothing would be sent to it until it spoke (race23's
// gap). n2 sees n3 after its own start, so its probe of n3 is to bring a
// discover; n3 does not see n2, so only n2 can start the exchange.
func TestNoticeDuringAProbe(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 }, "n2")
	mp.add("n3", false)
	var slow atomic.Bool
	slow.Store(true)
	mp.net.SetFault(func(from, to string, _ []byte) (bool, time.Duration) {
		if from == "n3" && to == "n2" && slow.Load() {
			return false, 300 * time.Millisecond // the probe's answer
		}
		return false, 0
	})
	mp.c.see("n2", "n3", true)
	rep2 := mp.replica("n2")
	rep2.settle()
	mp.startScope("n3")
	slow.Store(false)
	mp.nodes["n2"].d.gossip("n3", notice(scopeID, nil, process.PID{}))
	rep2.settle()
	testutil.EventuallyWithin(t, 5*time.Second, "n2's probe of n3 to be answered", func() bool {
		v := mp.view("n2", "n3")
		return !v.Verifying && v.Scope != ""
	})
	if v := mp.view("n2", "n3"); v.Absent {
		t.Fatalf("n3 absent with its scope running: %+v", v)
	}
	b := mp.spawn("n2")
	if err := mp.nodes["n2"].s.Join(b, "g"); err != nil {
		t.Fatal(err)
	}
	mp.waitMembers("g", []process.PID{b}, "n3")
}

// TestNoticeNamesTheScope: a start notice names the scope's process, so a
// node that did not know it applies what that process sends at once,
// without a hello to verify it first (after nodes start together, one for
// nearly every pair, each answered from behind the peer's queue).
func TestNoticeNamesTheScope(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 }, "n2")
	mp.add("n3", false)
	mp.c.see("n2", "n3", true)
	n2 := mp.nodes["n2"]
	testutil.EventuallyWithin(t, 5*time.Second, "n2's probe to find no scope on n3", func() bool {
		return mp.view("n2", "n3").Absent
	})
	s3 := mp.startScope("n3")
	hellos := func() float64 {
		return counter(t, n2.reg, "pg_cluster_messages_sent_total", map[string]string{"type": "hello"})
	}
	before := hellos()
	n2.d.gossip("n3", notice(scopeID, nil, s3.PID()))
	mp.replica("n2").settle()
	if v := mp.view("n2", "n3"); v.Scope != s3.PID().String() || v.Absent {
		t.Fatalf("n2's view of n3 after its notice: %+v", v)
	}
	mp.c.see("n3", "n2", true)
	c := mp.spawn("n3")
	if err := s3.Join(c, "g"); err != nil {
		t.Fatal(err)
	}
	mp.waitMembers("g", []process.PID{c}, "n2")
	if n := hellos() - before; n != 0 {
		t.Errorf("n2 sent %v hellos to verify a scope its notice named", n)
	}
	// A notice never replaces a scope known already: it may be an old
	// run's, relayed late.
	n2.d.gossip("n3", notice(scopeID, nil, process.PID{Node: "n3", ID: s3.PID().ID + 100, Creation: s3.PID().Creation}))
	if v := mp.view("n2", "n3"); v.Scope != s3.PID().String() {
		t.Errorf("a notice replaced the known scope: %+v", v)
	}
	mp.waitMembers("g", []process.PID{c}, "n2")
}

// TestLostNoticeCoveredByTheProbe: a start notice lost in gossip (race23's
// second gap). n2's scope starts seeing nobody, so its notice reaches no
// one; then it sees n1 and probes it. The probe (over the transport) is
// n2's notice too: n1, which has members and has never sent n2 its state,
// sends it (here the discover its join owed), once. Anti-entropy is off.
func TestLostNoticeCoveredByTheProbe(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 }, "n1")
	n1 := mp.nodes["n1"]
	a := mp.spawn("n1")
	if err := n1.s.Join(a, "g"); err != nil {
		t.Fatal(err)
	}
	mp.add("n2", false)
	mp.c.see("n1", "n2", true) // n1's probe finds no scope on n2
	testutil.EventuallyWithin(t, 5*time.Second, "n1's probe to find no scope on n2", func() bool {
		return mp.view("n1", "n2").Absent
	})
	mp.startScope("n2") // sees nobody: its notice goes nowhere
	mp.replica("n2").settle()
	mp.c.see("n2", "n1", true)
	mp.waitMembers("g", []process.PID{a}, "n2")
	mp.replica("n1").settle()
	sent := counter(t, n1.reg, "pg_cluster_messages_sent_total", map[string]string{"type": "sync"}) +
		counter(t, n1.reg, "pg_cluster_messages_sent_total", map[string]string{"type": "discover"})
	if sent != 1 {
		t.Errorf("n1 sent n2 its whole state %v times, want once", sent)
	}
}
