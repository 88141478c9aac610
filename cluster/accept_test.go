package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
)

// flakyListener fails its first accepts as a process out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// An accept that fails (EMFILE) is retried with backoff: the node accepts
// again once it can, the failures are counted, and the log line is
// rate-limited.
func TestAcceptRetriesAfterEMFILE(t *testing.T) {
	t.Parallel()
	logs := &testutil.SyncBuffer{}
	n, err := ListenTCP(TCPOptions{Name: "b", Listen: "127.0.0.1:0", Key: noSecretKey, Logger: testLogger(logs)})
	if err != nil {
		t.Fatal(err)
	}
	fl := &flakyListener{Listener: n.ln}
	fl.fails.Store(10)
	n.ln = fl
	if err := n.Start(&countingReceiver{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	// Each connect wakes one failing accept, then is taken by the next.
	if err := dialRaw(t, n.Addr(), false, noSecretKey, "a", "b"); err != nil {
		t.Fatalf("a handshake after 10 failed accepts: %v", err)
	}
	st := n.AcceptStatus()
	if st.Errors != 10 || !strings.Contains(st.LastError, "too many open files") {
		t.Fatalf("accept status = %+v", st)
	}
	if c := strings.Count(logs.String(), "transport: accept failed; retrying"); c > 6 {
		t.Fatalf("accept failure logged %d times", c)
	}
}

// Connections that never complete the handshake: at most MaxHandshakes are
// held (each until HandshakeTimeout), the rest are closed at once, and a
// real node connects once they are gone.
func TestIdleConnectsAreCapped(t *testing.T) {
	// Not parallel: it measures the whole process (goroutines, memory).
	n, _ := bareNetwork(t, TCPOptions{Name: "b", MaxHandshakes: 4, StrangerHandshakes: 4, MaxHandshakesPerHost: 4, HandshakeTimeout: time.Second})
	before := runtime.NumGoroutine()
	var conns []net.Conn
	for range 40 {
		c, err := net.Dial("tcp", n.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	testutil.Eventually(t, "36 connections shed", func() bool { return n.AcceptStatus().Shed == 36 })
	if g := runtime.NumGoroutine() - before; g > 8 {
		t.Fatalf("%d goroutines for 40 idle connects", g)
	}
	if h := n.AcceptStatus().Handshaking; h != 4 {
		t.Fatalf("%d connections in their handshake, want 4", h)
	}
	closed := 0
	for _, c := range conns {
		if closedByPeer(t, c) {
			closed++
		}
	}
	if closed != 40 {
		t.Fatalf("%d of 40 idle connections closed by the handshake deadline", closed)
	}
	testutil.Eventually(t, "the slots freed", func() bool { return n.AcceptStatus().Handshaking == 0 })
	if err := dialRaw(t, n.Addr(), false, noSecretKey, "a", "b"); err != nil {
		t.Fatalf("a real handshake after the flood: %v", err)
	}
}

// testLogger logs at debug level into logs.
func testLogger(logs *testutil.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Handshakes under made-up names leave nothing behind: with a secret, a
// node that proves it holds it but is no member gets a peer only while
// its connection lasts; without one, such a connection makes no peer at
// all and is closed at the handshake deadline.
func TestStrangersLeaveNoPeers(t *testing.T) {
	// Not parallel: it measures the whole process (goroutines, memory).
	keys, _ := DeriveKeys(testSecret)
	for _, tt := range []struct {
		name string
		key  []byte
	}{{"secret", keys.Handshake}, {"no secret", noSecretKey}} {
		t.Run(tt.name, func(t *testing.T) {
			n, _ := bareNetwork(t, TCPOptions{Name: "zz", Key: tt.key, HandshakeTimeout: 500 * time.Millisecond, MaxHandshakesPerHost: 64, StrangerHandshakes: 64})
			before := runtime.NumGoroutine()
			for i := range 50 {
				c, err := net.Dial("tcp", n.Addr())
				if err != nil {
					t.Fatal(err)
				}
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if err := dialHandshake(c, tt.key, fmt.Sprintf("stranger%d", i), "zz", nil); err != nil {
					t.Fatal(err)
				}
				_, _ = c.Write(frameOf([]byte("a frame")))
				c.Close()
			}
			testutil.Eventually(t, "the strangers' peers gone", func() bool {
				return len(n.Peers()) == 0 && len(*n.peers.Load()) == 0
			})
			testutil.Eventually(t, "their goroutines gone", func() bool { return runtime.NumGoroutine() <= before+2 })
		})
	}
}

// disguise is a listener whose connections, while on, say they come from
// other hosts, one of ten in turn: a flood from 127.0.0.1 that the network
// takes for many strangers' (no packet leaves 127.0.0.1).
type disguise struct {
	net.Listener
	on atomic.Bool
	n  int // owned by the accepting goroutine
}

func (l *disguise) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil || !l.on.Load() {
		return c, err
	}
	l.n++
	return addrConn{Conn: c, addr: &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("192.0.2.%d", 1+l.n%10)), Port: 1}}, nil
}

// Strangers holding connections open after a bare hello cannot take the
// handshake slots from the members: they get their share, at most
// MaxHandshakesPerHost per host, and a member's connection still goes
// through while they hold it.
func TestStrangersCannotTakeMembersHandshakeSlots(t *testing.T) {
	t.Parallel()
	keys, _ := DeriveKeys(testSecret)
	dl := &disguise{}
	dl.on.Store(true)
	b, recvB := startBare(t, TCPOptions{Name: "b", Key: keys.Handshake, TLS: &TLSOptions{}, MaxHandshakes: 8, MaxHandshakesPerHost: 2,
		StrangerHandshakes: 4, HandshakeTimeout: 20 * time.Second}, func(l net.Listener) net.Listener {
		dl.Listener = l
		return dl
	})
	a, _ := startBare(t, TCPOptions{Name: "a", Key: keys.Handshake, TLS: &TLSOptions{}}, nil)
	b.PeerUp("a", a.Addr()) // the membership knows a: its host is a member's
	for i := range 40 {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// A TLS session, then a bare hello: the stranger waits for the
		// proof it will never send.
		go func() {
			tc, err := tlsClient(c, baseTLSConfig())
			if err == nil {
				h, _ := newHello(fmt.Sprintf("s%d", i))
				_, _ = tc.Write(h.append(nil))
			}
		}()
	}
	testutil.Eventually(t, "every flood connection taken or shed", func() bool {
		st := b.AcceptStatus()
		return st.Shed+uint64(st.Handshaking) == 40
	})
	if st := b.AcceptStatus(); st.Handshaking != 4 {
		t.Fatalf("strangers hold %d handshake slots, their share is 4 (%+v)", st.Handshaking, st)
	}
	dl.on.Store(false)
	a.PeerUp("b", b.Addr())
	testutil.Eventually(t, "the member's frame delivered while strangers hold their slots", func() bool {
		_ = a.Send("b", []byte("hi"))
		return recvB.n.Load() > 0
	})
}
