package http_test

import (
	"crypto/tls"
	"fmt"
	"io"
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/internal/testutil"
	httpkind "github.com/proctor-run/proctor/kinds/http"
)

// A route serves at most max_pending requests at once: with two held by
// its handler (taken, left unanswered) the third gets 429 limit
// at once and is counted; a reload that raises the bound admits the next
// one (the requests in flight still count), and when the held requests
// are answered the count is back to 0.
func TestMaxPendingRefuses(t *testing.T) {
	cfg := strings.Replace(base, "timeout: 300ms", "timeout: 10s\n    max_pending: 2", 1)
	n := start(t, cfg)
	c := client()
	defer c.CloseIdleConnections()
	node := n.rt.Env().Node
	pid, err := node.Resolve("app:echo")
	if err != nil {
		t.Fatal(err)
	}
	statuses := make(chan int, 3)
	// The handler takes each /hold request and leaves it unanswered.
	hold := func(k int) {
		go func() { s, _, _ := get(t, c, "GET", n.url("/hold"), ""); statuses <- s }()
		testutil.Eventually(t, fmt.Sprintf("the handler holds %d requests", k), func() bool {
			return strings.Count(n.log.String(), "holding the request") == k
		})
	}
	hold(1)
	hold(2)
	status, _, body := get(t, c, "POST", n.url("/echo"), "over the bound")
	want := `{"error":{"kind":"limit","message":"route app:any is serving max_pending (2) requests: try again later"}}` + "\n"
	if status != 429 || body != want {
		t.Errorf("past max_pending: %d %s, want 429 %s", status, body, want)
	}
	wantSeries(t, httpSeries(t, n), map[string]float64{
		"http_server_refused_requests_total route=/{what...} server=app:web": 1,
	})
	if v := n.server("app:web").View().(httpkind.ServerView); len(v.Routes) != 1 || v.Routes[0].MaxPending != 2 || v.Routes[0].Pending != 2 {
		t.Errorf("view: %+v", v.Routes)
	}
	// Raised in place: one more is admitted, the two held still count.
	n.reload(strings.Replace(cfg, "max_pending: 2", "max_pending: 3", 1))
	hold(3)
	if status, _, body := get(t, c, "POST", n.url("/echo"), "over again"); status != 429 || !strings.Contains(body, "max_pending (3)") {
		t.Errorf("past the raised max_pending: %d %s", status, body)
	}
	// The handler stopped: the held requests are answered (503) and
	// counted out; the next request is admitted (and finds no target).
	if err := node.Terminate(pid); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if s := <-statuses; s != 503 {
			t.Errorf("a held request got %d, want 503", s)
		}
	}
	if status, _, body := get(t, c, "POST", n.url("/echo"), "after"); status != 503 || !strings.Contains(body, `"kind":"stopped"`) {
		t.Errorf("after the held requests ended: %d %s", status, body)
	}
	wantSeries(t, httpSeries(t, n), map[string]float64{
		"http_server_refused_requests_total route=/{what...} server=app:web": 2,
	})
}

// The server speaks HTTP/1.1 only, so a connection carries one request at
// a time and the requests in flight are bounded by max_connections and
// max_pending: a TLS client that offers h2 gets http/1.1, and a client
// that starts HTTP/2 in the clear (prior knowledge, h2c) is refused.
func TestNoHTTP2(t *testing.T) {
	dir := t.TempDir()
	writeCert(t, dir, "h2")
	n := startIn(t, dir, strings.Replace(base, "max_body: 1024", "max_body: 1024\n    tls: {cert_file: web.crt, key_file: web.key}", 1))
	addr := n.server("app:web").Addr()
	tr := &nethttp.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&nethttp.Client{Transport: tr}).Get("https://" + addr + "/string")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 1 || resp.StatusCode != 200 || string(b) != "plain GET" {
		t.Errorf("a client offering h2: %s %d %q", resp.Proto, resp.StatusCode, b)
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if p := conn.ConnectionState().NegotiatedProtocol; p == "h2" {
		t.Errorf("negotiated %q", p)
	}
	conn.Close()

	plain := start(t, base)
	r := rawExchange(t, plain.server("app:web").Addr(), "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")[0]
	if r.ProtoMajor != 1 || r.StatusCode < 400 {
		t.Errorf("h2c preface: %s %d, want an HTTP/1.1 refusal", r.Proto, r.StatusCode)
	}
}
