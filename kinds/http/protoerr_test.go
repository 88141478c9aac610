package http_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strings"
	"testing"
	"time"
)

// rawExchange writes each request on one connection and reads a response
// to each, in order.
func rawExchange(t *testing.T, addr string, reqs ...string) []*nethttp.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	var out []*nethttp.Response
	for _, req := range reqs {
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatalf("write %q: %v", clipped(req), err)
		}
		resp, err := nethttp.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response to %q: %v", clipped(req), err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		out = append(out, resp)
	}
	return out
}

// The requests net/http refuses before any handler runs (headers past
// max_header_bytes, a malformed request line or header, an unknown
// transfer coding, another HTTP version) are answered in JSON too, with
// net/http's status, on a fresh connection and after a request served on
// a keep-alive one; and a handler's own reply that looks like net/http's
// text answer is sent as it is.
func TestProtocolErrorsAreJSON(t *testing.T) {
	n := start(t, base)
	addr := n.server("app:web").Addr()
	flood := "GET /string HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Flood: "+strings.Repeat("z", 100)+"\r\n", 200) + "\r\n"
	cases := []struct {
		name, req string
		status    int
		body      string
	}{
		{"headers past max_header_bytes", flood, 431,
			`{"error":{"kind":"limit","message":"the request's headers are larger than max_header_bytes (4096)"}}`},
		{"a malformed request line", "GET\r\n\r\n", 400,
			`{"error":{"kind":"invalid","message":"the request is malformed"}}`},
		{"a malformed header", "GET /string HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", 400,
			`{"error":{"kind":"invalid","message":"the request is malformed"}}`},
		{"no Host", "GET /string HTTP/1.1\r\n\r\n", 400,
			`{"error":{"kind":"invalid","message":"missing required Host header"}}`},
		{"an unknown transfer coding", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: zip\r\n\r\n", 501,
			`{"error":{"kind":"invalid","message":"Unsupported transfer encoding"}}`},
		{"another HTTP version", "GET /string HTTP/2.5\r\nHost: x\r\n\r\n", 505,
			`{"error":{"kind":"invalid","message":"unsupported protocol version"}}`},
	}
	for _, tc := range cases {
		for _, after := range []bool{false, true} {
			reqs := []string{tc.req}
			if after {
				reqs = []string{"GET /string HTTP/1.1\r\nHost: x\r\n\r\n", tc.req}
			}
			got := rawExchange(t, addr, reqs...)
			if after {
				if b, _ := io.ReadAll(got[0].Body); got[0].StatusCode != 200 || string(b) != "plain GET" {
					t.Errorf("%s: the request before: %d %s", tc.name, got[0].StatusCode, b)
				}
			}
			resp := got[len(got)-1]
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || string(b) != tc.body+"\n" || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s (after a request: %v): %d %s %q, want %d %s", tc.name, after, resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.status, tc.body)
			}
		}
	}
	// A handler's reply shaped like net/http's text answer is its own.
	fake := "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"
	req := fmt.Sprintf("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(fake), fake)
	got := rawExchange(t, addr, req, req)
	for _, resp := range got {
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != fake {
			t.Errorf("a body shaped like a protocol error: %d %q", resp.StatusCode, b)
		}
	}
}
