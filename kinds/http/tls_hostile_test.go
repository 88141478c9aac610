package http_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	httpkind "github.com/proctor-run/proctor/kinds/http"
)

// Hostile TLS clients against a server whose connections run over a
// deadlineConn (deadlineListener).

const bigLua = `
return { main = function()
  local inbox = process.inbox()
  local big = string.rep("x", 16 * 1024 * 1024)
  while true do
    local msg = inbox:receive()
    msg:reply(big)
  end
end }
`

func tlsBase(extra string) string {
	return strings.Replace(base, "max_body: 1024",
		"max_body: 1024\n    tls: {cert_file: web.crt, key_file: web.key}"+extra, 1) + `  - name: big
    kind: process.lua
    source: file://big.lua
  - name: bigroute
    kind: http.route
    server: web
    method: [GET]
    path: /big
    to: big
    timeout: 5s
    lifecycle: {auto_start: true}
`
}

// startTLS starts config (a tlsBase) in a directory with its certificate
// and big.lua.
func startTLS(t *testing.T, config string) *node {
	t.Helper()
	dir := t.TempDir()
	writeCert(t, dir, "web")
	if err := os.WriteFile(filepath.Join(dir, "big.lua"), []byte(bigLua), 0o644); err != nil {
		t.Fatal(err)
	}
	return startIn(t, dir, config)
}

func conns(n *node) int {
	return n.server("app:web").View().(httpkind.ServerView).Connections
}

// waitConns waits until the server serves want connections, and returns
// how long that took.
func waitConns(t *testing.T, n *node, want int, within time.Duration, what string) time.Duration {
	t.Helper()
	began := time.Now()
	testutil.EventuallyExplained(t, within, what, func() bool { return conns(n) == want },
		func() string { return fmt.Sprintf("%d connections, want %d", conns(n), want) })
	return time.Since(began)
}

// dripConn writes one byte at a time, every gap.
type dripConn struct {
	net.Conn
	gap time.Duration
}

func (c dripConn) Write(b []byte) (int, error) {
	for i := range b {
		time.Sleep(c.gap)
		if _, err := c.Conn.Write(b[i : i+1]); err != nil {
			return i, err
		}
	}
	return len(b), nil
}

// A handshake trickled one byte every 20 ms is cut at the handshake's
// timeout (read_header_timeout 500ms), not served for as long as it drips.
func TestTLSTrickledHandshakeIsCut(t *testing.T) {
	n := startTLS(t, tlsBase(""))
	addr := n.server("app:web").Addr()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c := tls.Client(dripConn{Conn: raw, gap: 20 * time.Millisecond}, &tls.Config{InsecureSkipVerify: true})
	began := time.Now()
	done := make(chan error, 1)
	go func() { done <- c.Handshake() }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("a handshake trickled over %s completed; read_header_timeout is 500ms", time.Since(began))
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("trickled handshake held %s", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("trickled handshake still going after 20s")
	}
	waitConns(t, n, 0, 10*time.Second, "after the trickled handshake")
}

// A TLS client that never reads a large reply is cut at write_timeout.
func TestTLSWriteTimeoutCutsNonReader(t *testing.T) {
	n := startTLS(t, tlsBase("\n    write_timeout: 1s"))
	addr := n.server("app:web").Addr()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	d := waitConns(t, n, 0, 15*time.Second, "a client that never reads 16 MiB")
	t.Logf("cut after %s", d)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.Copy(io.Discard, c)
	if got >= 16<<20 {
		t.Errorf("read %d bytes: the whole reply was sent", got)
	}
}

// An idle TLS keep-alive connection is closed at idle_timeout.
func TestTLSIdleTimeout(t *testing.T) {
	n := startTLS(t, tlsBase("\n    idle_timeout: 300ms"))
	addr := n.server("app:web").Addr()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /string HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for {
		if _, err := c.Read(buf); err != nil {
			break
		}
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("idle TLS connection held %s; idle_timeout 300ms", d)
	}
	waitConns(t, n, 0, 10*time.Second, "after idle_timeout")
}

// Connections mid-handshake when the server is updated (a new
// http.Server) and then stopped leave nothing behind (goleak at
// TestMain), and the update does not wait for them.
func TestTLSReloadAndStopMidHandshake(t *testing.T) {
	n := startTLS(t, tlsBase(""))
	addr := n.server("app:web").Addr()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := 0; i < 5; i++ {
		raw, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, raw)
		raw.Write([]byte{0x16, 0x03, 0x01}) // the start of a record, no more
	}
	waitConns(t, n, 5, 10*time.Second, "five handshakes begun")
	fixed := strings.Replace(tlsBase("\n    write_timeout: 3s"), "listen: 127.0.0.1:0", "listen: "+addr, 1)
	began := time.Now()
	sum := n.reload(fixed)
	t.Logf("reload %v took %s", sum, time.Since(began))
	if cn, err := peerCN(t, addr); err != nil || cn != "web" {
		t.Errorf("after the update: %q %v", cn, err)
	}
}

// TLS at max_connections 1 with the one connection busy (a request the
// handler never answers, within a 5s route timeout): a second TLS
// connection is turned away at once (closed, counted), and once the first
// is done a new one is served.
func TestTLSRefusedAtLimit(t *testing.T) {
	cfg := strings.Replace(tlsBase("\n    max_connections: 1"), "timeout: 300ms", "timeout: 3s", 1)
	n := startTLS(t, strings.Replace(cfg, "read_header_timeout: 500ms", "read_header_timeout: 5s", 1))
	addr := n.server("app:web").Addr()
	busy, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	fmt.Fprintf(busy, "GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
	testutil.Eventually(t, "the held request active", func() bool { return activeRequests(t, n) == 1 })
	before := refused(t, n)
	began := time.Now()
	second, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err == nil {
		second.SetReadDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(second, "GET /string HTTP/1.1\r\nHost: x\r\n\r\n")
		_, err = second.Read(make([]byte, 1))
		second.Close()
	}
	if err == nil {
		t.Fatal("a second TLS connection was served at max_connections 1")
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("turned away after %s", d)
	}
	testutil.Eventually(t, "the refusal counted", func() bool { return refused(t, n) == before+1 })
	busy.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 4096)
	if _, err := busy.Read(b); err != nil || !strings.HasPrefix(string(b), "HTTP/1.1 504") {
		t.Fatalf("the held request: %v %q", err, b[:20])
	}
	busy.Close()
	testutil.Eventually(t, "a new TLS connection served", func() bool {
		cn, err := peerCN(t, addr)
		return err == nil && cn == "web"
	})
}

// A TLS server's connections keep their deadlines and their places in
// max_connections through the tls.Conn they are served by (which runs
// over a deadlineConn): a connection that never starts its handshake,
// and one whose headers never end, are cut at read_header_timeout; an
// idle keep-alive connection gives its place to a new one at the limit.
func TestTLSDeadlinesAndIdleLimit(t *testing.T) {
	n := startTLS(t, tlsBase("\n    max_connections: 2"))
	addr := n.server("app:web").Addr()
	cut := func(what string, c net.Conn) {
		t.Helper()
		began := time.Now()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.ReadAll(c)
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("%s held for %s (%v); read_header_timeout is 500ms", what, d, err)
		}
	}
	noHandshake, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer noHandshake.Close()
	cut("a connection that never starts its handshake", noHandshake)
	loris, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer loris.Close()
	fmt.Fprintf(loris, "GET /string HTTP/1.1\r\nHost: x\r\n")
	cut("headers that never end", loris)

	// Two keep-alive connections served one request each, then idle.
	request := func(c *tls.Conn) error {
		fmt.Fprintf(c, "GET /string HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := nethttp.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	var idle []*tls.Conn
	for i := 0; i < 2; i++ {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := request(c); err != nil {
			t.Fatalf("keep-alive connection %d: %v", i, err)
		}
		idle = append(idle, c)
	}
	third, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("a third connection at max_connections 2 with two idle: %v", err)
	}
	defer third.Close()
	if err := request(third); err != nil {
		t.Fatalf("a third connection at max_connections 2 with two idle: %v", err)
	}
	// The one idle the longest gave its place.
	idle[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle[0].Read(make([]byte, 1)); err == nil {
		t.Error("the connection idle the longest is still open")
	}
}
