package cluster

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/faultnet"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

// An idle connection carries ticks both ways and stays up; a connection
// that drops what one side writes is closed by the other within the tick
// interval (a quarter more at most, and a second of slack), reported down,
// and dialed again once the drop ends.
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	// Short enough for a quick test, long enough that a loaded machine's
	// scheduling delays (hundreds of ms under -race at load 20) are not
	// silence: 200 ms was not.
	const tick = time.Second
	keys, _ := DeriveKeys(testSecret)
	f := faultnet.New()
	opts := func(name string) TCPOptions {
		return TCPOptions{Name: name, Key: keys.Handshake, TLS: &TLSOptions{}, TickInterval: tick, ReconnectMax: 100 * time.Millisecond,
			ListenFunc: f.Node(name).Listen, DialContext: f.Node(name).Dial}
	}
	b, recvB := bareNetwork(t, opts("b"))
	a, recvA := bareNetwork(t, opts("a"))
	a.PeerUp("b", b.Addr())
	b.PeerUp("a", a.Addr())
	testutil.Eventually(t, "connected", func() bool { return a.Send("b", []byte{1}) == nil && recvB.frames.Load() > 0 })

	// Idle for five tick intervals: the ticks keep it up.
	idle := time.NewTimer(5 * tick)
	<-idle.C
	if d := recvA.downs.Load() + recvB.downs.Load(); d != 0 {
		t.Fatalf("an idle connection was reported down %d times", d)
	}
	if p := a.Peers()[0]; p.Reconnects != 0 || !p.Connected {
		t.Fatalf("idle connection: %+v", p)
	}

	// b's writes vanish: a hears nothing and closes.
	f.Drop("b", "a")
	start := time.Now()
	testutil.Eventually(t, "a to report b down", func() bool { return recvA.downs.Load() > 0 })
	if took := time.Since(start); took > tick*5/4+time.Second {
		t.Fatalf("the silent connection was closed after %s (tick interval %s)", took, tick)
	}
	// Meanwhile sends fail at once rather than queue.
	if err := a.Send("b", []byte{2}); err != nil && !errors.Is(err, process.ErrNoConnection) {
		t.Fatalf("send while the link is down: %v", err)
	}
	f.Undrop("b", "a")
	before := recvB.frames.Load()
	testutil.Eventually(t, "the link to work again", func() bool {
		return a.Send("b", []byte{3}) == nil && recvB.frames.Load() > before && b.Send("a", []byte{4}) == nil
	})
}

// A one-way drop between two nodes of a cluster, with the default
// timings: the membership keeps both alive (indirect probes), the
// heartbeat reports the node down (monitors fire noconnection), and after
// the heal an ask gets through. The figures are logged (docs/cluster.md).
func TestOneWayDropIsDetected(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	n1, n2 := tc.node("n1").node, tc.node("n2").node
	target := spawn(t, n2, echo)
	watcher := spawnProbe(t, n1)
	if err := n1.Monitor(watcher.pid, target); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n1.Ask(target, process.Message{}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	tc.faults.Drop("n2", "n1")
	start := time.Now()
	e := receive(t, watcher.events, "the monitor to fire")
	detected := time.Since(start)
	if !errors.Is(e.Exit.Err, process.ErrNoConnection) {
		t.Fatalf("monitor fired with %v", e.Exit.Err)
	}
	if detected > 10*time.Second {
		t.Fatalf("a one-way drop detected after %s", detected)
	}
	if len(tc.node("n1").c.Membership().Members()) != 1 {
		t.Fatal("the membership declared n2 gone: the test does not isolate the heartbeat")
	}
	tc.faults.Undrop("n2", "n1")
	healed := time.Now()
	testutil.Eventually(t, "an ask after the heal", func() bool {
		_, _, err := n1.Ask(target, process.Message{}, 200*time.Millisecond)
		return err == nil
	})
	t.Logf("one-way drop detected after %s; an ask got through %s after the heal", detected.Round(time.Millisecond), time.Since(healed).Round(time.Millisecond))
}

// The next ask after a node's connection broke (its process was killed:
// the connection reset) fails at once with noconnection, instead of
// waiting for the membership to declare the node dead.
func TestAskAfterConnectionLossFailsAtOnce(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	n1, n2 := tc.node("n1").node, tc.node("n2").node
	target := spawn(t, n2, echo)
	watcher := spawnProbe(t, n1)
	if err := n1.Monitor(watcher.pid, target); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n1.Ask(target, process.Message{}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	tc.crash("n2")
	// The reset reached n1 (the membership takes a second or more to
	// declare n2 dead, so the ask below meets the transport's view).
	receive(t, watcher.events, "the monitor to fire")
	start := time.Now()
	_, _, err := n1.Ask(target, process.Message{}, 5*time.Second)
	if took := time.Since(start); !errors.Is(err, process.ErrNoConnection) || took > time.Second { // it waited for the membership: 1.6-2.3 s
		t.Fatalf("ask after the connection broke: %v after %s", err, took)
	}
}

// A peer that takes each connection and drops it at once (a node that
// keeps replacing it, a proxy that resets) makes the dialer back off,
// doubling up to ReconnectMax, rather than redial at ReconnectMin forever;
// and the "connection lost" line is rate-limited.
func TestFlappingConnectionBacksOff(t *testing.T) {
	t.Parallel()
	keys, _ := DeriveKeys(testSecret)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv := &TCPNetwork{opts: TCPOptions{Name: "b", Key: keys.Handshake}}
		srv.tls, _ = newTransportTLS(&TLSOptions{}, quiet)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if sc, ekm, err := srv.secure(context.Background(), c, true); err == nil {
				if _, err := acceptHandshake(sc, keys.Handshake, "b", ekm); err == nil {
					accepted.Add(1)
				}
			}
			c.Close()
		}
	}()
	logs := &testutil.SyncBuffer{}
	a, _ := bareNetwork(t, TCPOptions{Name: "a", Key: keys.Handshake, TLS: &TLSOptions{}, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 400 * time.Millisecond})
	a.log = testLogger(logs)
	a.PeerUp("b", ln.Addr().String())
	window := time.NewTimer(2 * time.Second)
	<-window.C
	n := accepted.Load()
	a.PeerDown("b")
	ln.Close()
	<-done
	// Backing off: 20+40+80+160+320 ms, then every 400 ms: about 9 in 2 s
	// (at ReconnectMin it was a hundred).
	if n < 2 || n > 20 {
		t.Fatalf("%d connections in 2s", n)
	}
	if c := strings.Count(logs.String(), "transport: connection lost"); c > 6 {
		t.Fatalf("connection lost logged %d times", c)
	}
}

// A node back under its name after the membership reported it gone (a
// restart on its address) dials before this node's membership has seen it
// join: its connection waits for the join rather than being refused, so
// its first dial carries its first frame.
func TestRestartedNodeDialsBeforeItsJoinIsSeen(t *testing.T) {
	t.Parallel()
	keys, _ := DeriveKeys(testSecret)
	logs := &testutil.SyncBuffer{}
	b, recvB := bareNetwork(t, TCPOptions{Name: "b", Key: keys.Handshake, TLS: &TLSOptions{}})
	b.log = testLogger(logs)
	a, _ := bareNetwork(t, TCPOptions{Name: "a", Key: keys.Handshake, TLS: &TLSOptions{}})
	b.PeerUp("a", a.Addr())
	a.PeerUp("b", b.Addr())
	testutil.Eventually(t, "connected", func() bool { return a.Send("b", []byte{1}) == nil && recvB.frames.Load() > 0 })
	b.PeerDown("a") // declared dead
	_ = a.Close()

	a2, _ := bareNetwork(t, TCPOptions{Name: "a", Key: keys.Handshake, TLS: &TLSOptions{}})
	a2.PeerUp("b", b.Addr()) // it joined, and dials at once
	before := recvB.frames.Load()
	if err := a2.Send("b", []byte{2}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "a2's dial to wait in b's handshake", func() bool { return b.AcceptStatus().Handshaking == 1 })
	b.PeerUp("a", a2.Addr()) // b's membership sees the join
	testutil.Eventually(t, "a2's frame delivered", func() bool { return recvB.frames.Load() > before })
	if strings.Contains(logs.String(), "reports it gone") {
		t.Fatalf("the restarted node's dial was refused:\n%s", logs)
	}
	if p := a2.Peers()[0]; p.Reconnects != 0 || p.LastError != "" {
		t.Fatalf("a2's peer: %+v", p)
	}
}
