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

	"github.com/proctor-run/proctor/internal/testutil"
	httpkind "github.com/proctor-run/proctor/kinds/http"
)

// A server holds at most max_reply_bytes of large reply bodies while it
// sends them: with a 6 MB reply held by a client that does not read,
// a second gets 503 limit at once; small replies are served meanwhile,
// and once the held replies are read the next large one is sent whole.
func TestReplyBytesBounded(t *testing.T) {
	cfg := strings.Replace(base, "max_header_bytes: 4096", "max_header_bytes: 4096\n    max_reply_bytes: 10MiB\n    write_timeout: 20s", 1)
	n := start(t, cfg)
	addr := n.server("app:web").Addr()
	// Larger than the sockets take at once (tcp_wmem is at most 4 MiB by
	// default), so a reply not read stays held.
	const size = 6_000_000
	// echo.lua's default path replies with the request's body, at most
	// max_body (1024): a large reply needs a handler of its own.
	n.write("big.lua", `return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    msg:reply(string.rep("b", `+fmt.Sprint(size)+`))
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
    timeout: 5s
    lifecycle: {auto_start: true}
`)
	// A client that asks and does not read: its reply stays held.
	hold := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	sending := func() int64 { return n.server("app:web").View().(httpkind.ServerView).Sending }
	c1 := hold()
	defer c1.Close()
	testutil.Eventually(t, "one reply held", func() bool { return sending() == size })
	c2 := hold()
	defer c2.Close()
	// c2's reply does not fit beside c1's: 503 at once.
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := nethttp.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	want := `{"error":{"kind":"limit","message":"the reply is 6000000 bytes, and the server holds max_reply_bytes (10485760) of replies being sent: try again later"}}` + "\n"
	if resp.StatusCode != 503 || string(b) != want || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("past max_reply_bytes: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	c := client()
	defer c.CloseIdleConnections()
	if s, _, body := get(t, c, "GET", n.url("/string"), ""); s != 200 || body != "plain GET" {
		t.Errorf("a small reply meanwhile: %d %s", s, body)
	}
	// c1 reads its reply: the bytes are counted out, and the next large
	// reply is sent whole.
	c1.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err = nethttp.ReadResponse(bufio.NewReader(c1), nil)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	b, err = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || len(b) != size {
		t.Errorf("the held reply: %d, %d bytes (%v after %s)", resp.StatusCode, len(b), err, time.Since(began))
	}
	testutil.Eventually(t, "nothing held", func() bool { return sending() == 0 })
	if s, _, body := get(t, c, "GET", n.url("/big"), ""); s != 200 || len(body) != size {
		t.Errorf("a large reply after: %d, %d bytes", s, len(body))
	}
}
