package cluster

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote/wire"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// dialRaw connects to a transport at addr as node self and runs the
// dialer's handshake with key, expecting want: over TLS (as a node with a
// secret and no certificates) when tlsOn.
func dialRaw(t *testing.T, addr string, tlsOn bool, key []byte, self, want string) error {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = clientHandshake(c, tlsOn, key, self, want)
	return err
}

// clientHandshake runs the dialer's side over c: TLS first when tlsOn
// (no certificate checked, as a node with a secret alone does), then the
// handshake over the session's keying material.
func clientHandshake(c net.Conn, tlsOn bool, key []byte, self, want string) (net.Conn, error) {
	var ekm []byte
	if tlsOn {
		tc, err := tlsClient(c, baseTLSConfig())
		if err != nil {
			return nil, err
		}
		c, ekm = tc, tcEKM(tc)
	}
	return c, dialHandshake(c, key, self, want, ekm)
}

// tlsClient runs a TLS client handshake over c that checks nothing.
func tlsClient(c net.Conn, cfg *tls.Config) (*tls.Conn, error) {
	cfg.InsecureSkipVerify = true
	tc := tls.Client(c, cfg)
	return tc, tc.Handshake()
}

// tcEKM is the keying material the handshake's proofs cover.
func tcEKM(tc *tls.Conn) []byte {
	cs := tc.ConnectionState()
	ekm, err := cs.ExportKeyingMaterial(ekmLabel, nil, ekmSize)
	if err != nil {
		panic(err)
	}
	return ekm
}

// rawConn is an authenticated connection made by hand, to send frames a
// real node never would.
func rawConn(t *testing.T, addr string, self, want string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	key, _ := DeriveKeys(testSecret)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	sc, err := clientHandshake(c, true, key.Handshake, self, want)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// closedByPeer reports whether the other end closed c (a read sees the
// end of the stream or a reset).
func closedByPeer(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

func frameOf(b []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	return append(out, b...)
}

// Garbage on the wire closes that connection with a logged error; the node
// lives on and keeps talking to its real peers.
func TestBadInputClosesTheConnection(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	n2 := tc.node("n2")
	addr := n2.c.Network().Addr()
	pid := spawn(t, n2.node, echo)
	okEnvelope, _ := wire.Encode(nil, &wire.Envelope{Signal: wire.Send, From: process.PID{Node: "a", ID: 1, Creation: 1}, To: pid, Topic: "t"})
	forged, _ := wire.Encode(nil, &wire.Envelope{Signal: wire.Send, From: process.PID{Node: "n1", ID: 1, Creation: 1}, To: pid, Topic: "t"})
	cases := []struct {
		name      string
		handshake bool
		send      []byte
		log       string
	}{
		{"garbage instead of TLS", false, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "connection refused"},
		{"garbage instead of a handshake", false, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "connection refused"},
		{"a hello with no name", false, []byte("PRCT\x01\x00"), "connection refused"},
		{"a hello with a bad name", false, append([]byte("PRCT\x01\x03a b"), make([]byte, 32)...), "connection refused"},
		{"another protocol version", false, append([]byte("PRCT\x09\x01a"), make([]byte, 32)...), "connection refused"},
		{"garbage frame", true, frameOf([]byte{0xde, 0xad, 0xbe, 0xef}), "bad input"},
		{"oversized frame", true, []byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3}, "bad input"},
		{"truncated frame", true, append([]byte{0, 0, 0, 100}, okEnvelope[:10]...), "bad input"},
		{"forged sender", true, frameOf(forged), "bad input"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := strings.Count(n2.logs.String(), c.log)
			// Each authenticated case is a node of its own name: the
			// node's log lines about a peer are rate-limited by its name
			// (five in ten seconds, whatever they say), and one case's
			// other lines (a connection lost, silent) must not use up
			// another's.
			self := fmt.Sprintf("a%d", i) // below "n2": the side that dials it
			var conn net.Conn
			if c.handshake {
				conn = rawConn(t, addr, self, "n2")
			} else {
				var err error
				if conn, err = net.Dial("tcp", addr); err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if c.name != "garbage instead of TLS" {
					if conn, err = tlsClient(conn, baseTLSConfig()); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := conn.Write(c.send); err != nil {
				t.Fatal(err)
			}
			if c.name == "truncated frame" {
				conn.(*tls.Conn).CloseWrite()
			}
			if !closedByPeer(t, conn) {
				t.Fatal("the connection stays open")
			}
			testutil.EventuallyExplained(t, 10*time.Second, "the error logged", func() bool { return strings.Count(n2.logs.String(), c.log) > before },
				func() string { return "the node's log:\n" + n2.logs.String() })
		})
	}
	// The node lives and its real peer still reaches it.
	if _, _, err := tc.node("n1").node.Ask(pid, process.Message{Topic: "still there"}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A well-formed envelope from an authenticated connection is delivered:
// the raw connection is a faithful stand-in for a node.
func TestRawConnectionDelivers(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n2")
	n2 := tc.node("n2")
	pr := spawnProbe(t, n2.node)
	c := rawConn(t, n2.c.Network().Addr(), "a", "n2")
	env, _ := wire.Encode(nil, &wire.Envelope{Signal: wire.Send, From: process.PID{Node: "a", ID: 1, Creation: 1}, To: pr.pid, Topic: "hello"})
	w := bufio.NewWriter(c)
	if err := writeFrame(w, env); err != nil || w.Flush() != nil {
		t.Fatal(err)
	}
	if m := receive(t, pr.msgs, "message"); m.Topic != "hello" || m.From.Node != "a" {
		t.Fatalf("%+v", m)
	}
}
