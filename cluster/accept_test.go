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
	n, _ := bareNetwork(t, TCPOptions{Name: "b", MaxHandshakes: 4, HandshakeTimeout: time.Second})
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
	keys, _ := DeriveKeys(testSecret)
	for _, tt := range []struct {
		name string
		key  []byte
	}{{"secret", keys.Handshake}, {"no secret", noSecretKey}} {
		t.Run(tt.name, func(t *testing.T) {
			n, _ := bareNetwork(t, TCPOptions{Name: "zz", Key: tt.key, HandshakeTimeout: 500 * time.Millisecond})
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
