package http_test

// Tests of the newcomer and attacker pass (session 8): each reproduces a
// bug the pass found, and failed before its fix.

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	httpkind "github.com/proctor-run/proctor/kinds/http"
	"github.com/proctor-run/proctor/value"
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

// TestNewcomerReplyHeaderControlBytes: a reply header value with a control
// byte other than a tab (RFC 9110 §5.5: a sender must not generate them) is
// refused like a line break, a 500 naming the header; a tab and bytes
// from 0x80 (obs-text) pass. Before the fix, "a\x01b", ESC and DEL were
// sent as they were.
func TestNewcomerReplyHeaderControlBytes(t *testing.T) {
	for _, bad := range []string{"a\x01b", "a\x1fb", "a\x7fb", "\x1b[31mred", "a\rb", "a\x00b"} {
		for _, v := range []any{bad, []any{"ok", bad}} {
			_, err := httpkind.ReplyResponse(map[string]any{"headers": map[string]any{"x-a": v}})
			if err == nil || value.KindOf(err) != value.KindInternal || !strings.Contains(err.Error(), "header X-A holds a control character") {
				t.Errorf("%q: %v, want a control character error", bad, err)
			}
		}
	}
	for _, good := range []string{"a\tb", "caf\xc3\xa9", "\xff\x80", ""} {
		resp, err := httpkind.ReplyResponse(map[string]any{"headers": map[string]any{"x-a": good}})
		if err != nil || resp.Header.Get("X-A") != good {
			t.Errorf("%q: %+v, %v", good, resp, err)
		}
	}

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
	resp = rawExchange(t, addr, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")[0]
	if resp.StatusCode != 200 {
		t.Errorf("OPTIONS *: %d", resp.StatusCode)
	}
	// The node still serves.
	if status, _, body := get(t, client(), "GET", n.url("/string"), ""); status != 200 || body != "plain GET" {
		t.Errorf("after: %d %s", status, body)
	}
}
