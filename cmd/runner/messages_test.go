package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotFoundSaysWhatWasTyped: the endpoint's 404 names the destination
// as typed (no "@node" appended to a local name) and the operation (an ask
// is not a "send to").
func TestNotFoundSaysWhatWasTyped(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte("namespace: app\nentries:\n  - {name: pg, kind: pg.scope, lifecycle: {auto_start: true}}\n"), 0o644)
	tok := tokenFile(t, "0123456789abcdef0123456789abcdef")
	r := runInProcess(t, "--log-format", "json", "--no-watch", "--http", "127.0.0.1:0", "--http-token-file", tok, cfg)
	addr := r.app.n.HTTPAddr().String()
	for cmd, want := range map[string]string{
		"send": "runner send: 404 Not Found: send to app:nobody: no process registered under that name\n",
		"ask":  "runner ask: 404 Not Found: ask app:nobody: no process registered under that name\n",
	} {
		if code, _, errs := runCLI(cmd, "--http-token-file", tok, addr, "app:nobody", "get"); code != 1 || errs != want {
			t.Errorf("%s: exit %d %q, want %q", cmd, code, errs, want)
		}
	}
	if code, _, errs := runCLI("ask", "--http-token-file", tok, addr, "app:nobody@"+r.app.node.Name(), "get"); code != 1 ||
		!strings.Contains(errs, "ask app:nobody@"+r.app.node.Name()+": no process") {
		t.Errorf("ask name@node: exit %d %q", code, errs)
	}
	r.stop(t)
}
