package http_test

// Tests of the newcomer and attacker pass (session 8): each reproduces a
// bug the pass found, and failed before its fix.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
)

// ctlLua replies with the header value the query's v names.
const ctlLua = `
local values = {soh = "a\1b", esc = "\27[31mred", del = "a\127b", tab = "a\tb", high = "caf\195\169\255"}
return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    msg:reply({headers = {["x-a"] = values[msg:payload().query.v]}, body = "sent"})
  end
end }
`

// TestNewcomerReplyHeaderControlBytes: TestReplyHeaderControlBytes's rule
// (a control byte other than a tab in a reply header value is a 500
// naming the header) from a Lua handler, whose reply comes as a
// value.Record, and the warning naming the route and its target; a tab
// and bytes from 0x80 pass.
func TestNewcomerReplyHeaderControlBytes(t *testing.T) {
	// From a Lua handler (its reply comes as a value.Record).
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ctl.lua"), []byte(ctlLua), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startIn(t, dir, strings.Replace(base, "file://echo.lua", "file://ctl.lua", 1))
	c := client()
	for _, v := range []string{"soh", "esc", "del"} {
		status, h, body := get(t, c, "GET", n.url("/x?v="+v), "")
		if status != 500 || h.Get("X-A") != "" || !strings.Contains(body, `"message":"the handler's reply header X-A holds a control character`) {
			t.Errorf("%s: %d %q %s", v, status, h.Get("X-A"), body)
		}
	}
	// The warning names the route and the entry that replied.
	if !strings.Contains(n.log.String(), `msg="http route: the handler's reply is no response" entry=app:web route=app:any to=app:echo error="the handler's reply header X-A holds a control character`) {
		t.Errorf("the warning does not name the route and its target:\n%s", n.log.String())
	}
	for v, want := range map[string]string{"tab": "a\tb", "high": "caf\xc3\xa9\xff"} {
		status, h, body := get(t, c, "GET", n.url("/x?v="+v), "")
		if status != 200 || h.Get("X-A") != want || body != "sent" {
			t.Errorf("%s: %d %q %s", v, status, h.Get("X-A"), body)
		}
	}
}

// TestNewcomerAsteriskTargetIsJSON: a request for "*" by another method
// than OPTIONS, which net/http's mux refuses with a bare 400, is answered
// in the JSON of every other refusal, the connection closed; OPTIONS *
// stays net/http's 200. Before the fix the 400 had an empty body.
func TestNewcomerAsteriskTargetIsJSON(t *testing.T) {
	n := start(t, base)
	addr := n.server("app:web").Addr()
	resp := rawExchange(t, addr, "GET * HTTP/1.1\r\nHost: x\r\n\r\n")[0]
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/json" || !resp.Close ||
		string(b) != `{"error":{"kind":"invalid","message":"the request target * is only for OPTIONS"}}`+"\n" {
		t.Errorf("GET *: %d %v close=%v %q", resp.StatusCode, resp.Header, resp.Close, b)
	}
	// HTTP/2's preface reaches the mux as PRI *: said so, in JSON.
	resp = rawExchange(t, addr, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")[0]
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 505 || resp.ProtoMajor != 1 || !resp.Close ||
		string(b) != `{"error":{"kind":"invalid","message":"HTTP/2 is not offered: the server speaks HTTP/1.1"}}`+"\n" {
		t.Errorf("PRI *: %d %v close=%v %q", resp.StatusCode, resp.Header, resp.Close, b)
	}
	resp = rawExchange(t, addr, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")[0]
	if resp.StatusCode != 200 {
		t.Errorf("OPTIONS *: %d", resp.StatusCode)
	}
	// The node still serves.
	if status, _, body := get(t, client(), "GET", n.url("/string"), ""); status != 200 || body != "plain GET" {
		t.Errorf("after: %d %s", status, body)
	}
}

// The example of docs/kinds/http.md's "A route to a partition or a pool",
// as the page shows it.
const (
	partitionYAML = `  - name: counter
    kind: process.lua
    source: file://counter.lua

  # Four counters; a name always reaches the same one.
  - name: counters
    kind: supervisor.partition
    process: counter
    partitions: 4
    lifecycle: {auto_start: true}

  - name: count
    kind: http.route
    server: web
    method: POST
    path: /count/{name}
    to: counters
    key: path.name        # hashed to pick the worker: required for a partition
    lifecycle: {auto_start: true}

  # Two counters taking turns: each counts only what it saw.
  - name: pair
    kind: router.pool
    routee: counter
    size: 2
    strategy: round_robin
    lifecycle: {auto_start: true}

  - name: count_any
    kind: http.route
    server: web
    method: POST
    path: /any/{name}
    to: pair
    lifecycle: {auto_start: true}
`
	partitionLua = `-- Counts requests by name: each POST adds one and answers the count.
return { main = function()
  local counts = {}
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    local name = msg:payload().params.name
    counts[name] = (counts[name] or 0) + 1
    msg:reply({body = {name = name, count = counts[name]}})
  end
end }
`
)

// TestNewcomerPartitionAndPoolExample runs the page's example: through
// the partition a name's count goes 1, 2, 3 (one worker holds it), through
// the round-robin pool 1, 1, 2, 2 (each routee counts its half).
func TestNewcomerPartitionAndPoolExample(t *testing.T) {
	n := startExample(t, "partition", "counter.lua", partitionLua, partitionYAML)
	c := client()
	defer c.CloseIdleConnections()
	for path, counts := range map[string][]string{"/count/ann": {"1", "2", "3", "4"}, "/count/bob": {"1", "2"}, "/any/ann": {"1", "1", "2", "2"}} {
		for _, want := range counts {
			status, h, body := get(t, c, "POST", n.url(path), "")
			if status != 200 || h.Get("Content-Type") != "application/json" || body != `{"count":`+want+`,"name":"`+path[strings.LastIndex(path, "/")+1:]+`"}`+"\n" {
				t.Errorf("POST %s: %d %q, want count %s", path, status, body, want)
			}
		}
	}
}

// TestNewcomerServerSwapKeepsBusyConnections: a change of the server's
// timeouts starts a new http.Server; the old one's keep-alive connections
// in use must not be closed under a request their client is sending. Busy
// clients (POST, which net/http's Transport does not retry, as wrk does
// not) see no error through the swaps: the old server answers their next
// request with Connection: close, and they reconnect. Before the fix the
// old server's Shutdown closed each connection the moment it was idle
// between two requests, and wrk -c16 saw ~13 read errors a swap.
func TestNewcomerServerSwapKeepsBusyConnections(t *testing.T) {
	n := start(t, base)
	other := strings.Replace(base, "read_timeout: 2s", "read_timeout: 3s", 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	errs := make(chan error, 1)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client()
			defer c.CloseIdleConnections()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Post(n.url("/echo"), "text/plain", strings.NewReader("hi"))
				if err != nil {
					failed.Add(1)
					select {
					case errs <- err:
					default:
					}
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != "hi" {
					failed.Add(1)
					select {
					case errs <- fmt.Errorf("%d %q", resp.StatusCode, b):
					default:
					}
					continue
				}
				ok.Add(1)
			}
		}()
	}
	for i := range 10 {
		time.Sleep(30 * time.Millisecond)
		if i%2 == 0 {
			n.reload(other)
		} else {
			n.reload(base)
		}
	}
	time.Sleep(30 * time.Millisecond)
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Errorf("%d of %d requests failed through 10 server swaps; first: %v", failed.Load(), failed.Load()+ok.Load(), <-errs)
	}
	if ok.Load() < 100 {
		t.Errorf("only %d requests served", ok.Load())
	}
}

// TestNewcomerReplyOverMaxReplyBytesIs500: a reply larger than
// max_reply_bytes itself can never be sent, so it is the handler's
// failure, a 500 that says so and a warning naming the route; not the
// 503 "try again later" of a reply that does not fit beside others being
// sent, which tells clients to retry for ever. Before the fix: 503.
func TestNewcomerReplyOverMaxReplyBytesIs500(t *testing.T) {
	cfg := strings.Replace(base, "max_header_bytes: 4096", "max_header_bytes: 4096\n    max_reply_bytes: 1MiB", 1)
	n := start(t, cfg)
	n.write("big.lua", `return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    msg:reply(string.rep("b", tonumber(msg:payload().query.n)))
  end
end }`)
	n.reload(cfg + `  - name: big
    kind: process.lua
    source: file://big.lua
  - name: rbig
    kind: http.route
    server: web
    method: GET
    path: /big
    to: big
    lifecycle: {auto_start: true}
`)
	c := client()
	defer c.CloseIdleConnections()
	status, h, body := get(t, c, "GET", n.url("/big?n=2000000"), "")
	want := `{"error":{"kind":"internal","message":"the reply is 2000000 bytes, more than max_reply_bytes (1048576): it cannot be sent"}}` + "\n"
	if status != 500 || body != want || h.Get("Content-Type") != "application/json" {
		t.Errorf("over max_reply_bytes: %d %q", status, body)
	}
	if !strings.Contains(n.log.String(), "route=app:rbig") || !strings.Contains(n.log.String(), "larger than max_reply_bytes") {
		t.Errorf("no warning naming the route:\n%s", n.log.String())
	}
	// One that fits is sent.
	if status, _, body := get(t, c, "GET", n.url("/big?n=1000000"), ""); status != 200 || len(body) != 1000000 {
		t.Errorf("within max_reply_bytes: %d %d bytes", status, len(body))
	}
}

// TestNewcomerTargetNotRunningSaysSo: a route whose `to` entry is not
// running (here its script fails at once and is being restarted) answers
// 503 saying the entry is not running, not the "no process registered
// under that name" of a to_name. Before the fix: the latter.
func TestNewcomerTargetNotRunningSaysSo(t *testing.T) {
	n := start(t, base)
	n.write("dead.lua", `return { main = function() error("dead on arrival") end }`)
	n.reload(base + `  - name: dead
    kind: process.lua
    source: file://dead.lua
  - name: rdead
    kind: http.route
    server: web
    method: GET
    path: /dead
    to: dead
    lifecycle: {auto_start: true}
`)
	c := client()
	defer c.CloseIdleConnections()
	want := `{"error":{"kind":"stopped","message":"route app:rdead: app:dead: not running"}}` + "\n"
	testutil.Eventually(t, "503 not running", func() bool {
		status, _, body := get(t, c, "GET", n.url("/dead"), "")
		return status == 503 && body == want
	})
	// The node's other routes serve meanwhile.
	if status, _, body := get(t, c, "GET", n.url("/string"), ""); status != 200 || body != "plain GET" {
		t.Errorf("other route: %d %s", status, body)
	}
}
