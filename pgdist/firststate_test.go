package pgdist

import (
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
)

// TestFirstChangeGoesAsTheWholeState: a scope's first change to a peer it
// never sent its whole state goes as that state (a sync), so the peer,
// which verifies the sender before it applies anything, holds it all and
// asks for nothing. Ops would leave it not knowing what it missed, and it
// would send a discover, answered by the whole state again: after 100
// nodes start together, that second exchange of both states was half of
// every start's messages (issue 23, BenchmarkPGConverge100).
func TestFirstChangeGoesAsTheWholeState(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 }, "n1")
	n1 := mp.nodes["n1"]
	a := mp.spawn("n1")
	if err := n1.s.Join(a, "g"); err != nil {
		t.Fatal(err)
	}
	mp.replica("n1").settle()
	// n2's scope starts seeing nobody (its start asks no one), then sees
	// n1, whose scope its probe finds; n1 does not see n2 yet.
	mp.add("n2", true)
	n2 := mp.nodes["n2"]
	mp.c.see("n2", "n1", true)
	rep2 := mp.replica("n2")
	rep2.settle()
	b := mp.spawn("n2")
	if err := n2.s.Join(b, "g", "h"); err != nil {
		t.Fatal(err)
	}
	rep2.settle()
	mp.waitMembers("h", []process.PID{b}, "n1")
	mp.replica("n1").settle()
	if v := mp.view("n1", "n2"); !v.Synced {
		t.Errorf("n1 does not hold n2's whole state: %+v", v)
	}
	for _, kind := range []string{"discover", "sync"} {
		if n := counter(t, n1.reg, "pg_cluster_messages_sent_total", map[string]string{"type": kind}); n != 0 {
			t.Errorf("n1 sent %v %s messages to a peer whose whole state it holds", n, kind)
		}
	}
	// Once n1 sees n2 join, the two exchange their states as on any join.
	mp.c.see("n1", "n2", true)
	mp.waitMembers("g", []process.PID{a, b}, "n1", "n2")
}

// TestPeersPublishedWhenTheIntervalIsUp: a change of the peers sooner
// than publishEvery after the last publication is not published at once
// (a start changes them in nearly every round of the loop) but by a timer,
// with nothing more asked of the loop.
func TestPeersPublishedWhenTheIntervalIsUp(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 }, "n1", "n2")
	r := mp.replica("n1")
	r.settle()
	var last, early *[]peerSnap
	_ = r.s.Do(func() error {
		r.publish(time.Now())
		last = r.snap.Load()
		r.peers["n2"].attempt++
		r.changed = true
		r.publishIfChanged()
		early = r.snap.Load()
		return nil
	})
	if early != last {
		t.Errorf("published again within %s of the last publication", publishEvery)
	}
	testutil.EventuallyWithin(t, 5*time.Second, "the change to be published", func() bool { return r.snap.Load() != last })
}
