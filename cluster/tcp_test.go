package cluster

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote"
)

func bareNetwork(t *testing.T, opts TCPOptions) (*TCPNetwork, *countingReceiver) {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	opts.Logger = quiet
	n, err := ListenTCP(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &countingReceiver{}
	if err := n.Start(r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n, r
}

// A peer that never connects: sends queue up to the bound (then fail with
// ErrQueueFull), and once ConnectWait has passed fail at once as
// unreachable. Nothing waits.
func TestQueueBoundAndConnectWait(t *testing.T) {
	t.Parallel()
	n, _ := bareNetwork(t, TCPOptions{Name: "b", QueueSize: 4, ConnectWait: 300 * time.Millisecond})
	n.PeerUp("a", "127.0.0.1:1") // "a" dials "b"; it never will
	for i := range 4 {
		if err := n.Send("a", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Send("a", []byte{9}); !errors.Is(err, remote.ErrQueueFull) {
		t.Fatalf("send past the bound: %v", err)
	}
	testutil.Eventually(t, "sends to fail as unreachable", func() bool {
		return errors.Is(n.Send("a", []byte{1}), process.ErrUnreachable)
	})
	if p := n.Peers(); len(p) != 1 || p[0].QueueDepth != 4 || p[0].Connected || p[0].LastError == "" {
		t.Fatalf("peers: %+v", p)
	}
	n.PeerDown("a")
	if err := n.Send("a", []byte{1}); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send to a peer down: %v", err)
	}
	testutil.Eventually(t, "the queue dropped", func() bool { return n.Peers()[0].Dropped == 4 })
}

// A node that dialed before this one's membership reported it, and proved
// it holds the secret, is answered over its connection: a reply to its ask
// does not wait for the membership (nor fail).
func TestSendBackBeforeTheMembershipReportsTheNode(t *testing.T) {
	t.Parallel()
	keys, _ := DeriveKeys(testSecret)
	b, recvB := bareNetwork(t, TCPOptions{Name: "b", Key: keys.Handshake})
	a, recvA := bareNetwork(t, TCPOptions{Name: "a", Key: keys.Handshake})
	if err := b.Send("a", []byte{1}); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send to a node neither reported nor connected: %v", err)
	}
	a.PeerUp("b", b.Addr()) // "a" dials "b"; b's membership has not seen a
	if err := a.Send("b", []byte{1}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "b to receive a's frame", func() bool { return recvB.frames.Load() == 1 })
	if err := b.Send("a", []byte{2}); err != nil {
		t.Fatalf("send back over a's connection: %v", err)
	}
	testutil.Eventually(t, "a to receive b's answer", func() bool { return recvA.frames.Load() == 1 })
}

// Without a secret the handshake proves nothing: a connection from a node
// the membership has not reported waits for it (within the handshake
// timeout), and only then carries frames.
func TestWithoutSecretOnlyMembersConnect(t *testing.T) {
	t.Parallel()
	b, recvB := bareNetwork(t, TCPOptions{Name: "b"})
	a, _ := bareNetwork(t, TCPOptions{Name: "a"})
	a.PeerUp("b", b.Addr())
	if err := a.Send("b", []byte{1}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "a's connection to wait in b's handshake slots", func() bool { return b.AcceptStatus().Handshaking == 1 })
	if recvB.frames.Load() != 0 || len(b.Peers()) != 0 {
		t.Fatalf("b took a frame or made a peer of a node that is no member: %+v", b.Peers())
	}
	b.PeerUp("a", a.Addr())
	testutil.Eventually(t, "b to receive a's frame once a is a member", func() bool { return recvB.frames.Load() == 1 })
}

// A peer whose address refuses connections: after the first failed dial,
// sends fail at once; once it listens, the dialer's backoff finds it.
func TestDialFailureAndReconnect(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	a, _ := bareNetwork(t, TCPOptions{Name: "a", ReconnectMax: 100 * time.Millisecond})
	a.PeerUp("b", addr)
	testutil.Eventually(t, "sends to fail at once", func() bool {
		return errors.Is(a.Send("b", []byte{1}), process.ErrUnreachable)
	})
	b, recv := bareNetwork(t, TCPOptions{Name: "b", Listen: addr})
	b.PeerUp("a", a.Addr()) // b's membership reports a (without a secret only members connect)
	testutil.Eventually(t, "the connection", func() bool { return a.Send("b", []byte{7}) == nil && recv.frames.Load() > 0 })
}

// An ask across nodes expires on both sides at its deadline: the asker's
// clock says timeout, its transport forgets the ask, and the late reply
// is not sent.
func TestAskDeadlineOnBothSides(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	// The callee replies only once the asker has given up and the
	// deadline has passed where the callee is too (it slept 400 ms, and
	// the asker had to be back within 300 ms: a loaded machine's timers
	// missed that): the ask can only end at its own deadline, and the
	// reply can only be late. The callee's deadline is the asker's as it
	// arrived (what was left of it), so it may end a little later.
	replied, release := make(chan bool, 1), make(chan struct{})
	slow := spawn(t, tc.node("n2").node, behaviorFunc(func(ctx process.Context, m process.Message) {
		<-release
		if d, ok := m.Deadline(); ok {
			time.Sleep(time.Until(d) + time.Millisecond) // wait for the deadline itself, not a guess
		}
		ok, _ := ctx.Reply(&m, "late", nil)
		replied <- ok
	}))
	_, _, err := tc.node("n1").node.Ask(slow, process.Message{Topic: "slow"}, 100*time.Millisecond)
	close(release)
	if !errors.Is(err, process.ErrTimeout) {
		t.Fatalf("ask: %v", err)
	}
	if ok := receive(t, replied, "the late reply"); ok {
		t.Fatal("the reply after the deadline was sent")
	}
	// The transport's table expires the ask on its own timer, a moment
	// after the asker's.
	var st remote.Stats
	testutil.Eventually(t, "the ask expired in the asker's transport", func() bool {
		st = tc.node("n1").c.Transport().Stats()
		return st.Pending == 0 && st.Expired == 1
	})
	if st.LateReplies != 0 {
		t.Fatalf("asker's transport: %+v", st)
	}
}

// Many messages from one sender arrive in order.
func TestOrderPerPair(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	pr := spawnProbe(t, tc.node("n2").node)
	const n = 20000
	got := make(chan int, 1)
	go func() {
		for i := range n {
			m := <-pr.msgs
			if m.Payload != float64(i) {
				got <- i
				return
			}
		}
		got <- n
	}()
	for i := range n {
		for tc.node("n1").node.Send(pr.pid, process.Message{Payload: float64(i)}) != nil {
			time.Sleep(time.Millisecond)
		}
	}
	if i := receive(t, got, "every message"); i != n {
		t.Fatalf("message %d out of order", i)
	}
}

// Monitors, links, terminate and kill of processes on another node, over
// TCP, from Go.
func TestRemoteProcessSignals(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	n1, n2 := tc.node("n1").node, tc.node("n2").node
	watcher := spawnProbe(t, n1)
	if err := n1.SetTrapLinks(watcher.pid, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		stop func(process.PID) error
		want error
	}{
		{"terminate", n1.Terminate, process.ErrShutdown},
		{"kill", n1.Kill, process.ErrKilled},
	} {
		monitored := spawn(t, n2, echo)
		linked := spawn(t, n2, echo)
		if err := n1.Monitor(watcher.pid, monitored); err != nil {
			t.Fatal(err)
		}
		if err := n1.Link(watcher.pid, linked); err != nil {
			t.Fatal(err)
		}
		// The relations are in place on n2 once a round trip has gone by.
		if _, _, err := n1.Ask(linked, process.Message{}, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := c.stop(monitored); err != nil {
			t.Fatal(err)
		}
		if err := c.stop(linked); err != nil {
			t.Fatal(err)
		}
		got := map[process.EventKind]process.Event{}
		for range 2 {
			e := receive(t, watcher.events, c.name+": event")
			got[e.Kind] = e
		}
		if e := got[process.EventExit]; e.From != monitored || !errors.Is(e.Exit.Err, c.want) {
			t.Errorf("%s: monitor event %+v", c.name, e)
		}
		if e := got[process.EventLinkDown]; e.From != linked || !errors.Is(e.Exit.Err, c.want) {
			t.Errorf("%s: link event %+v", c.name, e)
		}
	}
}
