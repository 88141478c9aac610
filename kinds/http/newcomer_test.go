package http_test

import (
	"strings"
	"testing"
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
	for _, p := range []string{"/echo", "/x%2Fy", "/x/..y", "/x/.well-known", "/x/a.b"} {
		if status, _, body := get(t, c, "POST", n.url(p), "hi"); status == 400 {
			t.Errorf("POST %s: %d %s, want it served", p, status, body)
		}
	}
}
