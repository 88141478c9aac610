package observe

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
)

func listenTest(t *testing.T, opts ListenOptions) *Server {
	t.Helper()
	h := http.NewServeMux()
	h.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	return serve(t, h, opts)
}

// serve serves h on a free loopback port until the end of the test.
func serve(t *testing.T, h http.Handler, opts ListenOptions) *Server {
	t.Helper()
	opts.Logger = slog.New(slog.DiscardHandler)
	s, err := Listen("127.0.0.1:0", h, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s
}

func dial(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closes c within d (a read
// returns EOF or a reset rather than timing out).
func closedByServer(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

// TestListenDefaultsBoundClients: without options the endpoint still times
// out idle and silent connections and bounds headers and connections (the
// flood of issue 10 held 20 k idle keep-alive connections for ever).
func TestListenDefaultsBoundClients(t *testing.T) {
	s := listenTest(t, ListenOptions{})
	srv := s.srv
	if srv.IdleTimeout != DefaultIdleTimeout || srv.ReadHeaderTimeout != DefaultReadHeaderTimeout ||
		srv.ReadTimeout != DefaultReadTimeout || srv.WriteTimeout != DefaultWriteTimeout ||
		srv.MaxHeaderBytes != DefaultMaxHeaderBytes || int(s.ln.max.Load()) != DefaultMaxConns {
		t.Fatalf("server %+v, max conns %d", srv, int(s.ln.max.Load()))
	}
}

// TestIdleAndSilentConnectionsAreClosed: a keep-alive connection left idle
// after a request, and one that never sends a request, are both closed by
// the server.
func TestIdleAndSilentConnectionsAreClosed(t *testing.T) {
	s := listenTest(t, ListenOptions{IdleTimeout: 200 * time.Millisecond, ReadHeaderTimeout: 200 * time.Millisecond})
	idle := dial(t, s)
	io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != 200 || resp.Close {
		t.Fatalf("keep-alive request: %v %+v", err, resp)
	}
	resp.Body.Close()
	silent := dial(t, s)
	if !closedByServer(idle, 10*time.Second) {
		t.Fatal("an idle keep-alive connection was not closed")
	}
	if !closedByServer(silent, 10*time.Second) {
		t.Fatal("a connection that sent nothing was not closed")
	}
	testutil.Eventually(t, "the server to count them closed", func() bool { return s.OpenConns() == 0 })
}

// TestConnectionLimitHolds: a flood of connections never holds more than
// MaxConns of the server's descriptors, and /healthz answers again once
// the flood ends.
func TestConnectionLimitHolds(t *testing.T) {
	const max = 4
	s := listenTest(t, ListenOptions{MaxConns: max, ReadHeaderTimeout: 30 * time.Second})
	var flood []net.Conn
	for range 4 * max {
		flood = append(flood, dial(t, s))
	}
	testutil.Eventually(t, "the limit to fill", func() bool { return s.OpenConns() == max })
	// While the flood holds every slot, a probe waits.
	probe := &http.Client{Timeout: 300 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := probe.Get("http://" + s.Addr().String() + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("a request was served past the connection limit")
	}
	for _, c := range flood {
		c.Close()
	}
	probe.Timeout = 10 * time.Second
	resp, err := probe.Get("http://" + s.Addr().String() + "/healthz")
	if err != nil {
		t.Fatalf("/healthz after the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz %d", resp.StatusCode)
	}
	if p := s.ln.peak.Load(); p > max {
		t.Fatalf("%d connections open at once, limit %d", p, max)
	}
}

// TestSilentFloodTimesOut: a flood that keeps its connections open but
// sends nothing is timed out, so /healthz is answered while it lasts.
func TestSilentFloodTimesOut(t *testing.T) {
	const max = 4
	s := listenTest(t, ListenOptions{MaxConns: max, ReadHeaderTimeout: 200 * time.Millisecond})
	for range 4 * max {
		dial(t, s)
	}
	probe := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := probe.Get("http://" + s.Addr().String() + "/healthz")
	if err != nil {
		t.Fatalf("/healthz during a silent flood: %v", err)
	}
	resp.Body.Close()
	if p := s.ln.peak.Load(); p > max {
		t.Fatalf("%d connections open at once, limit %d", p, max)
	}
}

// TestHeaderLimit: headers past MaxHeaderBytes are refused with 431.
func TestHeaderLimit(t *testing.T) {
	s := listenTest(t, ListenOptions{MaxHeaderBytes: 1 << 10})
	c := dial(t, s)
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 16<<10)+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
}

// TestIdleConnectionsDoNotStarveProbes: more idle keep-alive connections
// than MaxConns (each made a request and waits for its next one) do not
// keep a probe out: at the limit the one idle the longest is closed.
func TestIdleConnectionsDoNotStarveProbes(t *testing.T) {
	s := listenTest(t, ListenOptions{})
	var idle []net.Conn
	for range DefaultMaxConns + 8 {
		c := dial(t, s)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("keep-alive request %d: %v", len(idle), err)
		}
		resp.Body.Close()
		idle = append(idle, c)
		// The server sees a connection turn idle a moment after its
		// client has read the answer; on a busy machine, later ones
		// could turn idle first. Wait, so that "idle the longest" is the
		// order they were opened in.
		want := min(len(idle), DefaultMaxConns)
		testutil.Eventually(t, "the connection to turn idle", func() bool {
			return s.ln.idleConns() == want
		})
	}
	probe := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := probe.Get("http://" + s.Addr().String() + "/healthz")
	if err != nil {
		t.Fatalf("/healthz with %d idle connections open: %v", len(idle), err)
	}
	resp.Body.Close()
	if p := s.ln.peak.Load(); p > DefaultMaxConns {
		t.Fatalf("%d connections open at once, limit %d", p, DefaultMaxConns)
	}
	// The first ones, idle the longest, were closed to make room.
	if !closedByServer(idle[0], 10*time.Second) {
		t.Fatal("the connection idle the longest is still open")
	}
}
