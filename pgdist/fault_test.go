package pgdist

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
)

// A sync, ops or discover from a process that is not its node's scope is
// ignored (OTP's overlay_missing): another process of a member node, or a
// node that runs no scope of the entry. A bogus sync from the real scope
// is applied, and the next full exchange puts it right (forced_sync).
func TestForgedSyncIgnored(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 }, "n1", "n2")
	mp.c.connect("n1", "n2", "n3")
	mp.add("n3", false) // a member node without the scope
	p := mp.spawn("n1")
	if err := mp.nodes["n1"].s.Join(p, "one"); err != nil {
		t.Fatal(err)
	}
	r := mp.spawn("n2")
	if err := mp.nodes["n2"].s.Join(r, "one"); err != nil {
		t.Fatal(err)
	}
	mp.waitMembers("one", []process.PID{p, r}, "n1", "n2")

	forge := func(from string, sender process.PID, topic string, groups map[string][]process.PID) {
		t.Helper()
		var payload []byte
		if topic == topicOps {
			payload = []byte{protoVersion}
			for g, pids := range groups {
				payload = appendOp(payload, pgscope.Op{Group: g, PIDs: pids})
			}
		} else {
			payload = appendSync([]byte{protoVersion}, groups)
		}
		m := process.Message{From: sender, Topic: topic, Payload: string(payload)}
		if err := mp.nodes[from].node.SendName("n1", scopeID, m); err != nil {
			t.Fatal(err)
		}
	}
	n1 := mp.nodes["n1"]
	ignored := func() float64 {
		return counter(t, n1.reg, "pg_cluster_ignored_total", map[string]string{"reason": "unverified"})
	}
	// Another process of n2 claims n2's members.
	rogue := mp.spawn("n2")
	for _, topic := range []string{topicSync, topicOps, topicDiscover} {
		forge("n2", rogue, topic, map[string][]process.PID{"one": {rogue, rogue}, "forged": {rogue}})
	}
	// A process of n3, which runs no scope.
	stranger := mp.spawn("n3")
	forge("n3", stranger, topicOps, map[string][]process.PID{"one": {stranger}})
	testutil.Eventually(t, "the forged messages to be dropped", func() bool { return ignored() >= 4 })
	mp.waitMembers("one", []process.PID{p, r}, "n1")
	if got := n1.s.GetMembers("forged"); len(got) != 0 {
		t.Fatalf("forged group on n1: %v", got)
	}
	if v := mp.view("n1", "n2"); v.Scope != mp.nodes["n2"].s.PID().String() {
		t.Fatalf("n2's scope as n1 knows it: %+v", v)
	}

	// forced_sync: the real scope's bogus sync is applied (one group
	// replaced, one added) ...
	s2 := mp.nodes["n2"].s.PID()
	forge("n2", s2, topicSync, map[string][]process.PID{"one": {r, r}, "forced_sync": {r, r}})
	mp.waitMembers("one", []process.PID{p, r, r}, "n1")
	mp.waitMembers("forced_sync", []process.PID{r, r}, "n1")
	// ... until a discover makes n2 send its real state.
	d := process.Message{From: n1.s.PID(), Topic: topicDiscover,
		Payload: string(appendSync([]byte{protoVersion}, map[string][]process.PID{"one": {p}}))}
	if err := n1.node.SendName("n2", scopeID, d); err != nil {
		t.Fatal(err)
	}
	mp.waitMembers("one", []process.PID{p, r}, "n1")
	mp.waitMembers("forced_sync", nil, "n1")
}

// A breaker opens after circuit_breaker_failures failed sends, skips
// sends while open, shows half-open after circuit_breaker_reset_time, and
// closes when its probe gets through; what the peer missed arrives with
// the probe (the whole state). Retries back off exponentially up to
// max_retries.
func TestBreakerAndRetries(t *testing.T) {
	const base = 100 * time.Millisecond
	mp := newMemPG(t, func(s *pgscope.Spec) {
		s.AntiEntropyInterval = 0
		s.CircuitBreakerFailures = 2
		s.CircuitBreakerResetTime = 1500 * time.Millisecond
		s.MaxRetries = 3
		s.RetryBaseDelay = base
		s.RetryMaxDelay = 4 * base
	}, "n1", "n2")
	n1 := mp.nodes["n1"]
	p0 := mp.spawn("n1")
	if err := n1.s.Join(p0, "g"); err != nil {
		t.Fatal(err)
	}
	mp.waitMembers("g", []process.PID{p0}, "n1", "n2")
	if st := n1.m.breakerStates(scopeID)["n2"]; st != "closed" {
		t.Fatalf("breaker before: %q", st)
	}

	mp.net.Cut("n1", "n2")
	p1 := mp.spawn("n1")
	start := time.Now()
	if err := n1.s.Join(p1, "g"); err != nil {
		t.Fatal(err)
	}
	// Each retry, by the time it is seen: the gaps grow.
	var seen []time.Duration
	testutil.EventuallyWithin(t, 10*time.Second, "the retries to run out", func() bool {
		v := mp.view("n1", "n2")
		for len(seen) < v.Retries {
			seen = append(seen, time.Since(start))
		}
		return v.Retries == 3 && v.Owed == "sync"
	})
	if st := n1.m.breakerStates(scopeID)["n2"]; st != "open" {
		t.Fatalf("breaker after the failures: %q", st)
	}
	// The first failure arms retry 1 (after base), whose failure arms
	// retry 2 (after 2 base), then retry 3 (after 4 base): the retries are
	// seen no sooner (allowing for the polling).
	for i, want := range []time.Duration{2 * base, 4 * base} {
		if gap := seen[i+1] - seen[i]; gap < want*8/10 {
			t.Errorf("retries %d and %d %s apart; the backoff wants %s", i+1, i+2, gap, want)
		}
	}
	failed := counter(t, n1.reg, "pg_cluster_send_failures_total", nil)
	if failed < 4 { // the fan-out and three retries
		t.Errorf("%v failures counted", failed)
	}
	if got := sorted(mp.nodes["n2"].s.GetMembers("g")); !slices.Equal(got, sorted([]process.PID{p0})) {
		t.Fatalf("n2 got the change through a cut: %v", got)
	}

	testutil.EventuallyWithin(t, 10*time.Second, "the breaker to show half-open", func() bool {
		return n1.m.breakerStates(scopeID)["n2"] == "half_open"
	})
	if time.Since(start) < 1500*time.Millisecond {
		t.Fatalf("half-open after %s, before the reset time", time.Since(start))
	}
	mp.net.Heal("n1", "n2")
	p2 := mp.spawn("n1")
	if err := n1.s.Join(p2, "g"); err != nil {
		t.Fatal(err)
	}
	mp.waitMembers("g", []process.PID{p0, p1, p2}, "n1", "n2")
	// n2 may hold the probe's state before n1's view says the send went
	// through: the view is published on a timer (view.go), so it is
	// polled, not read once.
	testutil.EventuallyWithin(t, 10*time.Second, "the breaker to close after the probe", func() bool {
		return n1.m.breakerStates(scopeID)["n2"] == "closed"
	})
	testutil.EventuallyWithin(t, 10*time.Second, "n2 to be owed nothing after the probe", func() bool {
		v := mp.view("n1", "n2")
		return v.Owed == "" && v.Retries == 0
	})
}

func TestBreaker(t *testing.T) {
	var b breaker
	now := time.Now()
	reset := time.Second
	if !b.allow(now, reset) {
		t.Fatal("closed breaker refused")
	}
	for i := range 2 {
		if b.failure(now, 3) {
			t.Fatalf("opened at failure %d of 3", i+1)
		}
	}
	b.success()
	b.failure(now, 3)
	b.failure(now, 3)
	if !b.failure(now, 3) || b.state != open {
		t.Fatal("not open after three consecutive failures")
	}
	if b.allow(now.Add(reset/2), reset) {
		t.Fatal("open breaker let a send through")
	}
	if b.shown(now.Add(reset), reset) != halfOpen {
		t.Fatal("not shown half-open after the reset time")
	}
	if !b.allow(now.Add(reset), reset) || b.allow(now.Add(reset), reset) {
		t.Fatal("half-open breaker must let exactly one probe through")
	}
	b.failure(now.Add(reset), 3)
	if b.state != open || b.allow(now.Add(reset+reset/2), reset) {
		t.Fatal("a failed probe must open the breaker again for a reset time")
	}
	if !b.allow(now.Add(2*reset), reset) {
		t.Fatal("no second probe")
	}
	b.success()
	if b.state != closed || b.failures != 0 {
		t.Fatalf("not closed after a successful probe: %+v", b)
	}
}

// The health check counts real peers: healthy while a peer's scope is
// heard from (anti-entropy), unhealthy when it goes quiet though the
// membership still shows it (a partition of the transport), healthy again
// once traffic resumes.
func TestHealthReflectsPeers(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) {
		s.AntiEntropyInterval = 50 * time.Millisecond
		s.CircuitBreakerResetTime = 100 * time.Millisecond
	}, "n1", "n2")
	check := mp.nodes["n1"].health.get("pg.broadcast_recent." + scopeID)
	if check == nil {
		t.Fatal("no health check")
	}
	testutil.Eventually(t, "n1 to hear from n2", func() bool {
		return mp.view("n1", "n2").Synced && check() == nil
	})
	mp.net.Cut("n1", "n2")
	mp.net.Cut("n2", "n1")
	testutil.Eventually(t, "the quiet peer to make n1 unhealthy", func() bool { return check() != nil })
	mp.net.Heal("n1", "n2")
	mp.net.Heal("n2", "n1")
	testutil.Eventually(t, "n1 to be healthy again", func() bool { return check() == nil })
}

// A hello that gets no answer within protocol_timeout gives up: what the
// unverified node sent is dropped, and it is owed a discover, retried.
// Once the network is fast again the nodes converge.
func TestProtocolTimeout(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) {
		s.AntiEntropyInterval = 0
		s.ProtocolTimeout = 100 * time.Millisecond
		s.RetryBaseDelay = 50 * time.Millisecond
		s.MaxRetries = 100
	}, "n1")
	// n2's frames to n1 take longer than protocol_timeout.
	mp.net.SetFault(func(from, to string, _ []byte) (bool, time.Duration) {
		if from == "n2" && to == "n1" {
			return false, 300 * time.Millisecond
		}
		return false, 0
	})
	mp.add("n2", true)
	mp.c.connect("n1", "n2")
	r := mp.spawn("n2")
	if err := mp.nodes["n2"].s.Join(r, "g"); err != nil {
		t.Fatal(err)
	}
	n1 := mp.nodes["n1"]
	testutil.Eventually(t, "a hello to time out", func() bool {
		return counter(t, n1.reg, "pg_cluster_ignored_total", map[string]string{"reason": "unverified"}) > 0
	})
	if got := n1.s.GetMembers("g"); len(got) != 0 {
		t.Fatalf("n1 applied messages of an unverified sender: %v", got)
	}
	mp.net.SetFault(nil)
	mp.waitMembers("g", []process.PID{r}, "n1", "n2")
}

// A node that runs no scope of the entry is found out by a probe (a hello
// answered name-not-found) and sent nothing more, so it is not flooded
// with messages nobody takes; once a scope starts there it announces
// itself and gets the members.
func TestNodeWithoutTheScope(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 }, "n1")
	var frames atomic.Int64
	mp.net.SetFault(func(from, to string, _ []byte) (bool, time.Duration) {
		if from == "n1" && to == "n3" {
			frames.Add(1)
		}
		return false, 0
	})
	mp.add("n3", false)
	mp.c.connect("n1", "n3")
	testutil.Eventually(t, "n1 to find n3 has no scope", func() bool { return mp.view("n1", "n3").Absent })
	n1 := mp.nodes["n1"]
	before := frames.Load()
	p := mp.spawn("n1")
	for range 5 {
		if err := n1.s.Join(p, "g"); err != nil {
			t.Fatal(err)
		}
	}
	r := n1.d.replicaOf(scopeID)
	r.settle()
	if got := frames.Load() - before; got != 0 {
		t.Fatalf("%d frames to a node without the scope", got)
	}
	mp.startScope("n3")
	mp.waitMembers("g", copies(p, 5), "n1", "n3")
	if mp.view("n1", "n3").Absent {
		t.Fatal("n3 still absent with its scope running")
	}
}

// Anti-entropy serves first a peer that is owed the state and whose
// retries ran out: it is known to be behind; the others wait their turn.
func TestAntiEntropyServesTheOwedFirst(t *testing.T) {
	names := []string{"n1", "n2", "n3", "n4", "n5"}
	mp := newMemPG(t, func(s *pgscope.Spec) {
		s.AntiEntropyInterval = time.Hour // run by hand below
		s.MaxRetries = 0
	}, names...)
	n1 := mp.nodes["n1"]
	r := n1.d.replicaOf(scopeID)
	// When each node last applied something of n1's.
	heard := func(node string) time.Time {
		if h := mp.view(node, "n1").Heard; h != nil {
			return *h
		}
		return time.Time{}
	}
	// The start's exchanges are over when n1's messages stop arriving.
	testutil.Eventually(t, "the start's exchanges to end", func() bool {
		before := map[string]time.Time{}
		for _, n := range names[1:] {
			before[n] = heard(n)
		}
		time.Sleep(100 * time.Millisecond)
		for _, n := range names[1:] {
			if heard(n) != before[n] || before[n].IsZero() {
				return false
			}
		}
		return true
	})

	p := mp.spawn("n1")
	mp.net.Cut("n1", "n5")
	if err := n1.s.Join(p, "g"); err != nil {
		t.Fatal(err)
	}
	r.settle()
	if v := mp.view("n1", "n5"); v.Owed == "" {
		t.Fatalf("n5 not owed after a failed send: %+v", v)
	}
	mp.net.Heal("n1", "n5")
	mp.waitMembers("g", []process.PID{p}, "n2", "n3", "n4")
	r.do(r.antiEntropy) // the turn is n2's, but n5 is owed
	mp.waitMembers("g", []process.PID{p}, "n5")
	if v := mp.view("n1", "n5"); v.Owed != "" {
		t.Fatalf("n5 still owed: %+v", v)
	}
	// Then the turn goes on from where it was: n2 first.
	for _, n := range names {
		mp.nodes[n].d.replicaOf(scopeID).settle() // n5's view shows the sync
	}
	before := map[string]time.Time{}
	for _, n := range names[1:] {
		before[n] = heard(n)
	}
	r.do(r.antiEntropy)
	testutil.Eventually(t, "n2 to get the next anti-entropy sync", func() bool { return heard("n2").After(before["n2"]) })
	for _, n := range names[2:] {
		if heard(n) != before[n] {
			t.Errorf("%s got a sync out of turn", n)
		}
	}
}

// A second scope of the same entry on one node cannot take the name the
// first holds: its start fails, with an error that says so, and the first
// carries on (its peers, series and members untouched).
func TestSecondScopeOfAnEntryRefused(t *testing.T) {
	mp := newMemPG(t, nil, "n1", "n2")
	n1 := mp.nodes["n1"]
	peers := func() float64 { return counter(t, n1.reg, "pg_cluster_peers", map[string]string{"scope": scopeID}) }
	testutil.Eventually(t, "n1's scope to count n2 as a peer", func() bool { return peers() == 1 })
	n1.d.replicaOf(scopeID).settle()
	_, err := pgscope.NewWithOptions(n1.env, scopeID, mp.spec, pgscope.Options{Distributor: n1.d})
	if err == nil || !errors.Is(err, process.ErrNameTaken) {
		t.Fatalf("second scope: %v", err)
	}
	if peers() != 1 {
		t.Fatal("the refused scope took the first one's series with it")
	}
	p := mp.spawn("n1")
	if err := n1.s.Join(p, "g"); err != nil {
		t.Fatal(err)
	}
	mp.waitMembers("g", []process.PID{p}, "n1", "n2")
}

// Messages held while a node's scope is verified are older than any the
// scope sends once it is known: when a probe's answer makes it known
// first, they are applied then, before the newer ones, and the hello's
// later answer changes nothing. (They were applied at the hello's answer,
// after newer ones: a stale join came back.)
func TestHeldMessagesKeepTheirOrder(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 }, "n1", "n2")
	n1, s2 := mp.nodes["n1"], mp.nodes["n2"].s.PID()
	mp.waitMembers("g", nil, "n1", "n2")
	q := mp.spawn("n2")
	join := process.Message{From: s2, Topic: topicOps,
		Payload: string(appendOp([]byte{protoVersion}, pgscope.Op{Group: "g", PIDs: []process.PID{q}}))}
	empty := process.Message{From: s2, Topic: topicSync, Payload: string(appendSync([]byte{protoVersion}, nil))}
	r := n1.d.replicaOf(scopeID)
	var members []process.PID
	r.do(func() {
		r.deletePeer(r.peers["n2"]) // n2's scope is not known yet
		now := time.Now()
		r.message(join, now) // held until n2's scope is known
		r.probed(r.peers["n2"], &answer{node: "n2", from: s2}, now)
		r.message(empty, now) // q left since
		r.verified(&answer{node: "n2", pid: s2, from: s2}, now)
		members = n1.s.GetMembers("g")
	})
	if len(members) != 0 {
		t.Fatalf("members of g on n1 after n2's scope said none: %v", members)
	}
}
