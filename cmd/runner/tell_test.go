package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/internal/testutil"
)

// TestSendIsATell: as docs/cli.md says, `send` exits 0 once the node took
// the message, even when a router has no routee for it (a dead letter,
// unroutable), while `ask` reports the failure; -h says so.
func TestSendIsATell(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(`namespace: app
entries:
  - {name: pg, kind: pg.scope, lifecycle: {auto_start: true}}
  - {name: jobs, kind: router.group, scope: pg, group: jobs, lifecycle: {auto_start: true}}
`), 0o644)
	tok := tokenFile(t, "0123456789abcdef0123456789abcdef")
	r := runInProcess(t, "--log-format", "json", "--no-watch", "--http", "127.0.0.1:0", "--http-token-file", tok, cfg)
	addr := r.app.n.HTTPAddr().String()

	if code, out, errs := runCLI("send", "--http-token-file", tok, addr, "app:jobs", "run", `{"n":1}`); code != 0 || out != "" {
		t.Fatalf("send: exit %d %q %s", code, out, errs)
	}
	// The send returns once the pool has the message; the pool finds no
	// routee for it when it handles it.
	testutil.Eventually(t, "an unroutable dead letter", func() bool {
		for _, d := range r.app.n.DeadLetters().Recent() {
			if d.To == "app:jobs" && d.Reason == "unroutable" {
				return true
			}
		}
		return false
	})
	code, _, errs := runCLI("ask", "--http-token-file", tok, addr, "app:jobs", "run", `{"n":1}`)
	if code != 1 || !strings.Contains(errs, "no routees to route to") {
		t.Errorf("ask: exit %d %s", code, errs)
	}
	_, _, help := runCLI("send", "-h")
	if !strings.Contains(help, "fire-and-forget") {
		t.Errorf("send -h does not say a send is a tell:\n%s", help)
	}
	r.stop(t)
}
