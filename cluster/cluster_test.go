package cluster

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

func TestConvergeAndMessage(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2", "n3", "n4")
	tc.converged(20 * time.Second)
	// Every pair exchanges an ask both ways: each direction's connection
	// works, whichever node dialed it.
	for _, a := range []string{"n1", "n2", "n3", "n4"} {
		for _, b := range []string{"n1", "n2", "n3", "n4"} {
			if a == b {
				continue
			}
			pid := spawn(t, tc.node(b).node, echo)
			v, from, err := tc.node(a).node.Ask(pid, process.Message{Topic: "ping", Payload: a}, 10*time.Second)
			if err != nil || v != a || from != pid {
				t.Fatalf("%s asks %s: %v %v %v", a, b, v, from, err)
			}
		}
	}
	st := tc.node("n1").c.Status()
	if len(st.Members) != 3 || st.Members[0].Name != "n2" || st.Members[0].Peer == nil || !st.Members[0].Peer.Connected {
		t.Fatalf("status: %+v", st)
	}
}

func TestSendToUnknownNodeFailsAtOnce(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1")
	n := tc.node("n1").node
	start := time.Now()
	err := n.Send(process.PID{Node: "nowhere", ID: 1, Creation: 1}, process.Message{Topic: "x"})
	if !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send: %v", err)
	}
	_, _, err = n.Ask(process.PID{Node: "nowhere", ID: 1, Creation: 1}, process.Message{Topic: "x"}, 10*time.Second)
	if !errors.Is(err, process.ErrUnreachable) || time.Since(start) > time.Second {
		t.Fatalf("ask: %v after %s", err, time.Since(start))
	}
}

func TestSubscribeSeesJoinLeaveWithMetadata(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1")
	events := make(chan Event, 16)
	members, cancel := tc.node("n1").c.Membership().Subscribe(func(e Event) { events <- e })
	defer cancel()
	if len(members) != 0 {
		t.Fatalf("members %v", members)
	}
	n2 := tc.start("n2")
	e := receive(t, events, "join event")
	if e.Kind != MemberJoined || e.Member.Name != "n2" || e.Member.Transport != n2.c.Network().Addr() || e.Member.Meta.Protocol != ProtocolVersion {
		t.Fatalf("event %+v", e)
	}
	start := time.Now()
	tc.stop("n2")
	e = receive(t, events, "leave event")
	if e.Kind != MemberLeft || e.Member.Name != "n2" || e.Member.State != StateLeft {
		t.Fatalf("event %+v", e)
	}
	t.Logf("graceful leave seen after %s", time.Since(start))
	if m := tc.node("n1").c.Membership().Members(); len(m) != 0 {
		t.Fatalf("members after leave: %v", names(m))
	}
	known := tc.node("n1").c.Membership().Known()
	if len(known) != 1 || known[0].State != StateLeft {
		t.Fatalf("known: %+v", known)
	}
}

// A crashed node (no leave) is gone from every other node within the
// target of 5 s, and the monitors of its processes fire with
// noconnection.
func TestCrashedNodeIsGone(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2", "n3", "n4")
	tc.converged(20 * time.Second)
	victim := spawn(t, tc.node("n4").node, echo)
	watchers := map[string]*probe{}
	gone := map[string]chan time.Time{}
	for _, name := range []string{"n1", "n2", "n3"} {
		pr := spawnProbe(t, tc.node(name).node)
		if err := tc.node(name).node.Monitor(pr.pid, victim); err != nil {
			t.Fatal(err)
		}
		watchers[name] = pr
		ch := make(chan time.Time, 1)
		gone[name] = ch
		_, cancel := tc.node(name).c.Membership().Subscribe(func(e Event) {
			if e.Kind == MemberLeft && e.Member.Name == "n4" {
				ch <- time.Now()
			}
		})
		defer cancel()
	}
	// The monitors are in place on n4 once a round trip has gone by.
	for name := range watchers {
		if _, _, err := tc.node(name).node.Ask(victim, process.Message{Topic: "sync"}, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	tc.crash("n4")
	var worst time.Duration
	for name, ch := range gone {
		at := receive(t, ch, name+": n4 gone")
		worst = max(worst, at.Sub(start))
		e := receive(t, watchers[name].events, name+": EXIT")
		if e.Kind != process.EventExit || e.From != victim || !errors.Is(e.Exit.Err, process.ErrNoConnection) {
			t.Fatalf("%s: event %+v", name, e)
		}
	}
	t.Logf("crash detected by every node after %s", worst)
	if worst > 10*time.Second {
		t.Fatalf("crash detected after %s; the target is 5s", worst)
	}
	// A node declared dead is an operator's news: a warning, not an
	// info line like a graceful leave.
	// The membership's verdict may come after the event (the transport's
	// link tells first): wait for the line.
	for _, name := range []string{"n1", "n2", "n3"} {
		logs := tc.node(name).logs
		testutil.EventuallyWithin(t, 20*time.Second, name+" to warn that n4 is dead", func() bool {
			for line := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(line, `level=WARN msg="cluster: node gone"`) && strings.Contains(line, "peer=n4 state=dead") {
					return true
				}
			}
			return false
		})
	}
}

func TestWrongSecretIsRefused(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	for _, secret := range [][]byte{[]byte("another secret of sixteen bytes+"), nil} {
		opts, logs := tc.options("intruder", []string{tc.seed})
		opts.Secret = secret
		opts.Timing.RejoinMax = 200 * time.Millisecond
		c, err := Start(opts)
		if err != nil {
			t.Fatal(err)
		}
		// It keeps trying and failing; it never becomes a member, nor
		// sees one.
		testutil.Eventually(t, "several join attempts", func() bool {
			return strings.Count(logs.String(), "join attempt failed") >= 3
		})
		if m := c.Membership().Members(); len(m) != 0 {
			t.Errorf("intruder (secret %q) sees %v", secret, names(m))
		}
		for _, n := range []string{"n1", "n2"} {
			if m := tc.node(n).c.Membership().Members(); len(m) != 1 {
				t.Errorf("%s sees %v", n, names(m))
			}
		}
		_ = c.Close()
	}

	// Nor can a node with another secret use a transport: its proof is
	// refused when it dials...
	wrong, _ := DeriveKeys([]byte("another secret of sixteen bytes+"))
	before := strings.Count(tc.node("n2").logs.String(), "connection refused")
	if err := dialRaw(t, tc.node("n2").c.Network().Addr(), true, wrong.Handshake, "n1", "n2"); !errors.Is(err, ErrAuth) {
		t.Fatalf("handshake with the wrong key: %v", err)
	}
	testutil.Eventually(t, "the refusal logged", func() bool {
		return strings.Count(tc.node("n2").logs.String(), "connection refused") > before
	})
	// ...and a node dialing it finds its proof wrong, sends nothing and
	// fails its sends at once.
	impostor, err := ListenTCP(TCPOptions{Name: "zz", Listen: "127.0.0.1:0", Key: wrong.Handshake, TLS: &TLSOptions{}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	recv := &countingReceiver{}
	if err := impostor.Start(recv); err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	net1 := tc.node("n1").c.Network()
	net1.PeerUp("zz", impostor.Addr())
	defer net1.PeerDown("zz")
	testutil.Eventually(t, "sends to the impostor to fail", func() bool {
		err := net1.Send("zz", []byte{1})
		return errors.Is(err, process.ErrUnreachable)
	})
	testutil.Eventually(t, "the failed proof logged", func() bool {
		return contains(tc.node("n1").logs.String(), "authentication failed")
	})
	if n := recv.frames.Load(); n != 0 {
		t.Fatalf("impostor received %d frames", n)
	}
}

// countingReceiver counts what a bare network receives.
type countingReceiver struct {
	frames, downs atomic.Int64
}

func (r *countingReceiver) Receive(string, []byte) error { r.frames.Add(1); return nil }
func (r *countingReceiver) NodeDown(string)              { r.downs.Add(1) }

// Which bind addresses count as loopback for the no-secret warning.
func TestLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:0": true, "localhost:7946": true, "[::1]:1": true, "127.1.2.3:9": true,
		"0.0.0.0:7946": false, "10.0.0.1:7946": false, ":7946": false, "nonsense": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("%s: %v", addr, got)
		}
	}
}

// A node that left gracefully is gone for good: its transport counters
// (and so its per-peer metric series) go; one that crashed keeps them (it
// is retried, and may come back).
func TestLeftPeerCountersAreForgotten(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2", "n3")
	tc.converged(20 * time.Second)
	n1 := tc.node("n1")
	// Traffic both ways, so that n1 holds counters of both. What is
	// meant is that an ask went through: on a starved machine a first
	// TLS handshake can time out (HandshakeTimeout) and the transport
	// redials, so the ask is repeated until one does.
	for _, n := range []string{"n2", "n3"} {
		pid := spawn(t, tc.node(n).node, echo)
		var err error
		testutil.EventuallyExplained(t, 30*time.Second, "an ask of "+n, func() bool {
			_, _, err = n1.node.Ask(pid, process.Message{}, 5*time.Second)
			return err == nil
		}, func() string { return fmt.Sprint("last error: ", err) })
	}
	peerOf := func(name string) *PeerStatus {
		for _, m := range n1.c.Status().Members {
			if m.Name == name {
				return m.Peer
			}
		}
		return nil
	}
	tc.stop("n2")
	tc.crash("n3")
	testutil.EventuallyExplained(t, 10*time.Second, "n2's counters gone after its leave", func() bool { return peerOf("n2") == nil }, func() string {
		return fmt.Sprintf("n1 status: %+v\nn1 log:\n%s", n1.c.Status().Members, n1.logs.String())
	})
	testutil.Eventually(t, "n3 declared dead", func() bool { return len(n1.c.Membership().Members()) == 0 })
	if peerOf("n3") == nil {
		t.Fatal("a crashed node's counters went: it may come back")
	}
}

// A graceful leave is seen as one, not as a failure, however late the
// network carries the leaving node's announcement, and whatever overtakes
// it. Here what n2 sends n1 as it leaves is held for 300 ms, then
// delivered last first. n2 used to announce its leave once, best effort,
// and leave at once: n1 got the announcement after memberlist's leave (a
// busy n1 had both in memberlist's queue, which it takes last in, first
// out: TestLeftPeerCountersAreForgotten failed so), or here not at all (n2
// had closed its socket), and took n2 for failed. n2 now leaves only once
// n1 has acknowledged its announcement.
func TestLeaveIsNotTakenForAFailure(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t)
	// Failure detection slow enough not to take n2 for failed while its
	// packets (its probe acks too) are held.
	tc.timing = Timing{ProbeInterval: time.Second, LeaveTimeout: 10 * time.Second}
	tc.start("n1")
	tc.start("n2")
	tc.converged(20 * time.Second)
	n1 := tc.node("n1")
	gone := make(chan Member, 1)
	_, cancel := n1.c.Membership().Subscribe(func(e Event) {
		if e.Kind == MemberLeft && e.Member.Name == "n2" {
			select {
			case gone <- e.Member:
			default:
			}
		}
	})
	defer cancel()
	const hold, apart = 300 * time.Millisecond, 20 * time.Millisecond
	release := time.Now().Add(hold)
	var held atomic.Int64
	tc.faults.SetPacketFault(func(from, to string) (bool, time.Duration) {
		if from != "n2" || to != "n1" || !time.Now().Before(release) {
			return false, 0
		}
		// The i-th packet held goes out (50-i) × apart after release:
		// the later one sent, the sooner.
		i := held.Add(1)
		return false, time.Until(release) + time.Duration(max(0, 50-i))*apart
	})
	tc.stop("n2")
	mem := receive(t, gone, "n2 gone")
	if mem.State != StateLeft {
		t.Fatalf("n2 is %s after its leave (%d packets held), want left; n1's log:\n%s", mem.State, held.Load(), n1.logs.String())
	}
}

// Meta's flags (LeaveAcks) come last: the metadata of a build before
// them reads as not acknowledging a leave, with the fields before kept.
func TestMetaLeaveAcks(t *testing.T) {
	t.Parallel()
	m := localMeta("127.0.0.1:7000", time.Unix(1700000000, 5), 77)
	b := m.encode()
	got, err := decodeMeta(b)
	if err != nil || !got.LeaveAcks || !got.Started.Equal(m.Started) || got.Creation != 77 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	// The layout before flags: everything but the last byte (flags 1).
	if b[len(b)-1] != metaLeaveAcks {
		t.Fatalf("flags byte %d", b[len(b)-1])
	}
	old, err := decodeMeta(b[:len(b)-1])
	if err != nil || old.LeaveAcks || old.Creation != 77 || old.Transport != m.Transport {
		t.Fatalf("a build before flags: %+v, %v", old, err)
	}
	if m.LeaveAcks = false; m.encode()[len(b)-1] != 0 {
		t.Fatal("LeaveAcks false encoded as set")
	}
}

// A leave announcement or acknowledgement under a name this node does
// not know (made up: gossip names its sender) is dropped, not kept.
func TestLeaveMessagesOfStrangersAreDropped(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	m := tc.node("n1").c.Membership()
	for i := range 100 {
		m.membershipMsg(fmt.Sprint("ghost", i), []byte{msgLeaving})
		m.membershipMsg(fmt.Sprint("ghost", i), []byte{msgHeard})
	}
	m.membershipMsg("n2", []byte{msgHeard})
	m.settle()
	var leaving, heard int
	if err := m.run(func() { leaving, heard = len(m.leaving), len(m.heard) }); err != nil {
		t.Fatal(err)
	}
	if leaving != 0 || heard != 1 {
		t.Fatalf("after 100 strangers' messages: %d leaving, %d heard (want 0 and n2's 1)", leaving, heard)
	}
}
