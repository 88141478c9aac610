package http_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/config"
	httpkind "github.com/proctor-run/proctor/kinds/http"
	"github.com/proctor-run/proctor/value"
)

// TestEncodedDotSegments: net/http's ServeMux redirects a path with a
// `..` or `.` segment as written (/a/../b) to its clean form, but an
// encoded one (/a%2F..%2Fb, /%2e%2e/b) reaches the route decoded, as
// `..` in the payload's path and params: a handler joining params.rest to
// a directory would walk out of it. Such a path is a 400 naming the
// segment's offset, like a control character (issue 26, newcomer pass).
func TestEncodedDotSegments(t *testing.T) {
	n := start(t, base)
	c := client()
	defer c.CloseIdleConnections()
	for _, tc := range []struct {
		path string
		want string
	}{
		{"/x%2F..%2Fsecret", "the path has a '..' segment (at offset 3) once decoded"},
		{"/%2e%2e/etc/passwd", "the path has a '..' segment (at offset 1) once decoded"},
		{"/x/%2e%2e", "the path has a '..' segment (at offset 3) once decoded"},
		{"/x/%2E/y", "the path has a '.' segment (at offset 3) once decoded"},
		{"/x%2F.", "the path has a '.' segment (at offset 3) once decoded"},
	} {
		status, _, body := get(t, c, "GET", n.url(tc.path), "")
		if status != 400 || !strings.Contains(body, `"kind":"invalid"`) || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d %s, want 400 invalid with %q", tc.path, status, body, tc.want)
		}
	}
	// Dots that are not a whole segment, and an encoded slash alone, are
	// served.
	for _, p := range []string{"/echo", "/x%2Fy", "/x/..y", "/x/.well-known", "/x/a.b", "/x/..%5C..%5Cy"} {
		if status, _, body := get(t, c, "POST", n.url(p), "hi"); status == 400 {
			t.Errorf("POST %s: %d %s, want it served", p, status, body)
		}
	}
}

// TestPatternConflictNamesBoth: a route whose pattern conflicts with
// another route's of the same server is a validation error at its path,
// naming both routes, not only both patterns (issue 26, newcomer pass:
// the newcomer had to guess which entry held "GET /{what...}", and
// `runner validate` passed it); the reload is refused and the routes in
// force serve on. Two routes of other servers never conflict.
func TestPatternConflictNamesBoth(t *testing.T) {
	n := start(t, base)
	conf := base + `
  - name: down
    kind: http.route
    server: web
    path: /down
    to: echo
    lifecycle: {auto_start: true}
`
	n.write("app.yaml", conf)
	_, _, err := n.rt.Reload(context.Background(), &config.Loader{Kinds: newKinds()}, n.dir)
	line := strings.Count(conf[:strings.Index(conf, "path: /down")], "\n") + 1
	want := fmt.Sprintf("app.yaml:%d:11: app:down: path: pattern \"/down\" conflicts with route app:any's pattern \"GET /{what...}\"", line)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("reload: %v, want an error with %s", err, want)
	}
	c := client()
	defer c.CloseIdleConnections()
	if status, _, body := get(t, c, "POST", n.url("/echo"), "hi"); status != 200 || body != "hi" {
		t.Errorf("POST /echo after the refused reload: %d %q", status, body)
	}

	// The same route on a server of its own is no conflict.
	other := strings.Replace(conf, "    server: web\n    path: /down", "    server: web2\n    path: /down", 1) + `
  - name: web2
    kind: http.server
    listen: 127.0.0.1:0
    lifecycle: {auto_start: true}
`
	path := filepath.Join(t.TempDir(), "other.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(other, "file://", "file://"+n.dir+"/")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (&config.Loader{Kinds: newKinds()}).Load(path); err != nil {
		t.Errorf("routes of two servers: %v", err)
	}
}

// TestReplyHeaderControlBytes: a reply header value with a control
// character other than a tab (RFC 9110 §5.5: not a field value; ESC
// sequences reach a terminal running curl -v, and proxies refuse such a
// response) is a 500 naming the header and the byte, as a line break is
// (issue 26, attacker pass: a handler echoing a query into a header sent
// 0x01, 0x1b and 0x7f raw). A tab and bytes from 0x80 (obs-text) are sent.
func TestReplyHeaderControlBytes(t *testing.T) {
	for _, tc := range []struct{ v, want string }{
		{"a\x01b", "the handler's reply header X-A holds a control character (0x01 at offset 1)"},
		{"\x1b[31m", "the handler's reply header X-A holds a control character (0x1b at offset 0)"},
		{"ab\x7f", "the handler's reply header X-A holds a control character (0x7f at offset 2)"},
		{"a\r\nX-Evil: 1", "the handler's reply header X-A holds a line break (0x0d at offset 1)"},
		{"a\x00", "the handler's reply header X-A holds a control character (0x00 at offset 1)"},
	} {
		_, err := httpkind.ReplyResponse(map[string]any{"headers": map[string]any{"x-a": tc.v}, "body": "x"})
		if err == nil || value.KindOf(err) != value.KindInternal || err.Error() != tc.want {
			t.Errorf("header %q: %v, want %q", tc.v, err, tc.want)
		}
	}
	for _, v := range []string{"a\tb", "caf\xc3\xa9", "\xff\xfe", ""} {
		if _, err := httpkind.ReplyResponse(map[string]any{"headers": map[string]any{"x-a": v}, "body": "x"}); err != nil {
			t.Errorf("header %q: %v, want it sent", v, err)
		}
	}
}
