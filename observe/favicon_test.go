package observe

import (
	"strings"
	"testing"
)

// TestUIPageNamesItsIcon: the page names an inline (empty) icon, which its
// policy allows (img-src data:), so a browser does not ask for
// /favicon.ico and get a 404 for it.
func TestUIPageNamesItsIcon(t *testing.T) {
	h := opsHandler(Ops{})
	code, body := get(t, h, "/ui")
	if code != 200 || !strings.Contains(body, `<link rel="icon" href="data:,">`) {
		t.Fatalf("page %d without an inline icon", code)
	}
	if !strings.Contains(uiCSP, "img-src 'self' data:") {
		t.Fatalf("the policy forbids the inline icon: %s", uiCSP)
	}
}
