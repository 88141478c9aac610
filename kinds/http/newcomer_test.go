package http

import (
	"strings"
	"testing"

	"github.com/proctor-run/proctor/value"
)

// TestNewcomerReplyHeaderControlBytes: a reply header value with a control
// byte other than a tab (RFC 9110 §5.5: a sender must not generate them) is
// refused like a line break, a 500 naming the header; a tab and bytes
// from 0x80 (obs-text) pass. Before the fix, "a\x01b" and "a\x7fb" were
// sent as they were.
func TestNewcomerReplyHeaderControlBytes(t *testing.T) {
	for _, bad := range []string{"a\x01b", "a\x1fb", "a\x7fb", "\x1b[31mred", "a\rb", "a\x00b"} {
		reply := map[string]any{"headers": map[string]any{"x-a": bad}}
		for _, r := range []any{reply, asRecord(reply)} {
			_, err := ReplyResponse(r)
			if err == nil || value.KindOf(err) != value.KindInternal || !strings.Contains(err.Error(), "header X-A holds a control character") {
				t.Errorf("%q: %v, want a control character error", bad, err)
			}
		}
	}
	for _, good := range []string{"a\tb", "caf\xc3\xa9", "\xff\x80", ""} {
		reply := map[string]any{"headers": map[string]any{"x-a": []any{good}}}
		resp, err := ReplyResponse(reply)
		if err != nil || resp.Header.Get("X-A") != good {
			t.Errorf("%q: %+v, %v", good, resp, err)
		}
	}
}
