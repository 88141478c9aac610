package http_test

import (
	"context"
	"fmt"
	"github.com/proctor-run/proctor/config"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestToNotRunning: a route whose `to` is an entry that is not running
// (here, crashing and restarted with a backoff) answers 503 `stopped`
// saying so, not "no process registered under that name", which reads as
// a typo of a name when the entry is declared (issue 26, newcomer pass).
func TestToNotRunning(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "down.lua"), []byte(`return { main = function() error("always fails") end }`), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startIn(t, dir, base+`
  - name: down
    kind: process.lua
    source: file://down.lua
  - name: downroute
    kind: http.route
    server: web
    method: GET
    path: /down
    to: down
    lifecycle: {auto_start: true}
`)
	c := client()
	defer c.CloseIdleConnections()
	want := `{"error":{"kind":"stopped","message":"route app:downroute: app:down: not running"}}`
	var status int
	var body string
	for i := 0; i < 50; i++ {
		if status, _, body = get(t, c, "GET", n.url("/down"), ""); status == 503 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status != 503 || strings.TrimSpace(body) != want {
		t.Fatalf("GET /down: %d %s, want 503 %s", status, body, want)
	}
	// The other routes serve meanwhile.
	if status, _, body := get(t, c, "POST", n.url("/echo"), "hi"); status != 200 || body != "hi" {
		t.Errorf("POST /echo: %d %q", status, body)
	}
}

// TestPatternConflictNamesBoth: a route whose pattern conflicts with
// another route's fails to start naming both routes, not only both
// patterns (issue 26, newcomer pass: the newcomer had to guess which
// entry held "GET /{what...}").
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
	msg := fmt.Sprint(err)
	if err == nil {
		msg = n.log.String()
	}
	msg = strings.ReplaceAll(msg, `\"`, `"`) // the log quotes them
	if !strings.Contains(msg, `pattern "/down" conflicts with route app:any's pattern "GET /{what...}"`) {
		t.Fatalf("the conflict does not name both routes: %s", msg)
	}
}
