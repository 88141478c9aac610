package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lintConfig writes a configuration whose scripts run but have what the
// Lua lint finds: a misspelt global in a branch never taken, a misspelt
// module function, and a module required that nobody provides.
func lintConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "w.lua"), []byte(`local pg = require("pg")
return { main = function(x)
  if x == "never" then procss.send("a", "b") end
  if x == "never" then return pg.opne("app:pg"), require("utl") end
  return "done"
end }
`), 0o644)
	os.WriteFile(filepath.Join(dir, "util.lua"), []byte("return {}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - name: w
    kind: process.lua
    source: file://w.lua
    modules: {util: file://util.lua}
  - name: w2
    kind: process.lua
    source: file://w.lua
`), 0o644)
	return dir
}

// The lint's findings are warnings by default (exit 0), errors with
// --strict (exit 1), each FILE:LINE:COL: ENTRY_ID: message; what a source
// two entries share is reported once, unless it differs between them.
func TestValidateLintsLua(t *testing.T) {
	dir := lintConfig(t)
	wd, _ := os.Getwd()
	rel, _ := filepath.Rel(wd, filepath.Join(dir, "w.lua"))
	if strings.HasPrefix(rel, "..") {
		rel = filepath.Join(dir, "w.lua")
	}
	want := []string{
		rel + `:3:24: app:w: unknown global "procss" (did you mean "process"?)`,
		rel + `:4:34: app:w: pg.opne does not exist (did you mean pg.open?)`,
		rel + `:4:58: app:w: require "utl": no such module (did you mean "util"?); available: errors, json, pg, router, supervisor, util`,
		// app:w2 has no module util: its own finding.
		rel + `:4:58: app:w2: require "utl": no such module; available: errors, json, pg, router, supervisor`,
	}
	var out, errb bytes.Buffer
	if code := cli([]string{"validate", dir}, &out, &errb, nil, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if strings.Join(lines, "\n") != strings.Join(append(want, "4 warnings of the Lua lint (errors with --strict)"), "\n") {
		t.Fatalf("stderr:\n%s\nwant:\n%s", errb.String(), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(out.String(), "ok: 2 entries") {
		t.Fatalf("stdout %q", out.String())
	}
	out.Reset()
	errb.Reset()
	if code := cli([]string{"validate", "--strict", dir}, &out, &errb, nil, nil); code != 1 {
		t.Fatalf("--strict: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), want[0]) || !strings.HasSuffix(errb.String(), "4 errors (--strict)\n") || out.Len() != 0 {
		t.Fatalf("--strict: stdout %q stderr %q", out.String(), errb.String())
	}
	// The demo is clean, strictly.
	if code := cli([]string{"validate", "--strict", "../../config.example.yaml"}, &out, &errb, nil, nil); code != 0 {
		t.Fatalf("config.example.yaml --strict: exit %d: %s", code, errb.String())
	}
}

// runner run logs the lint's findings once, at load, and runs anyway.
func TestRunLogsLint(t *testing.T) {
	t.Parallel()
	dir := lintConfig(t)
	r := start(t, "run", "--log-format", "json", "--no-watch", "--main", "app:w", dir, "--", "go")
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, r.logs())
	}
	logs := r.logs()
	if n := strings.Count(logs, `"msg":"Lua lint: unknown global \"procss\" (did you mean \"process\"?)"`); n != 1 {
		t.Fatalf("lint logged %d times:\n%s", n, logs)
	}
	if !strings.Contains(logs, `"entry":"app:w"`) || !strings.Contains(logs, `w.lua:3:24`) {
		t.Fatalf("logs:\n%s", logs)
	}
}
