package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A script's error of any size is cut where the runtime logs it, keeps it
// for a view or streams it: error(string.rep("E", 8 MiB)) in a crash
// looping entry, and in a dynamic supervisor's child, wrote whole lines of
// megabytes three times per crash and /v1/entries/ID held it whole. The
// script that receives the error still gets all of it.
func TestLargeErrorsAreCutWhereShown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bigerr.lua", `return { main = function() error(string.rep("E", 8 * 1024 * 1024)) end }`)
	write("kid.lua", `return { main = function() error(string.rep("K", 8 * 1024 * 1024)) end }`)
	write("spawner.lua", `
local supervisor = require("supervisor")
return { main = function()
  -- The script that gets the error gets it whole.
  local pid = assert(process.spawn_monitored("bigerr"))
  local ev = process.events():receive()
  assert(#ev.result.error.message > 8 * 1024 * 1024, #ev.result.error.message)
  for i = 1, 3 do
    assert(supervisor.start_child("app:dyn", {id = "k" .. i, process = "kid", restart = "temporary"}))
  end
  process.register("spawner.done")
  process.inbox():receive()
end }`)
	write("c.yaml", `namespace: app
entries:
  - name: bigerr
    kind: process.lua
    source: file://bigerr.lua
    lifecycle: {auto_start: true, restart: {initial_delay: 20ms, max_delay: 20ms}}
  - {name: kid, kind: process.lua, source: file://kid.lua}
  - {name: dyn, kind: supervisor.dynamic, lifecycle: {auto_start: true}}
  - name: spawner
    kind: process.lua
    source: file://spawner.lua
    lifecycle: {auto_start: true, depends_on: [dyn]}
`)
	r := start(t, "run", "--log-format", "json", "--no-watch", "--http", "127.0.0.1:0", filepath.Join(dir, "c.yaml"))
	addr := r.httpAddr(t)
	r.waitFor(t, "a restart of app:bigerr and the kids' exits logged", func() bool {
		l := r.logs()
		return strings.Contains(l, `"restarting entry"`) && strings.Count(l, `"child exited"`) >= 3 && strings.Contains(l, `"process crashed"`)
	})
	r.waitFor(t, "the spawner done", func() bool {
		_, body := httpGet(t, "http://"+addr+"/v1/entries/app:spawner")
		return strings.Contains(body, `"running"`) && strings.Count(r.logs(), `"child exited"`) >= 3
	})
	r.mu.Lock()
	for _, line := range r.stderr {
		if len(line) > 16<<10 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
	r.mu.Unlock()
	for _, path := range []string{"/v1/supervisors", "/v1/entries"} {
		code, body := httpGet(t, "http://"+addr+path)
		if code != 200 || len(body) > 64<<10 {
			t.Errorf("%s: %d, %d bytes", path, code, len(body))
		}
	}
	// The entry shows its last error between a crash and its restart.
	r.waitFor(t, "app:bigerr's error shown, cut", func() bool {
		code, body := httpGet(t, "http://"+addr+"/v1/entries/app:bigerr")
		if code != 200 || len(body) > 64<<10 {
			t.Fatalf("/v1/entries/app:bigerr: %d, %d bytes", code, len(body))
		}
		return strings.Contains(body, "bytes cut)")
	})
	if !strings.Contains(r.logs(), "of 8388") {
		t.Errorf("no log line says the error's total size")
	}
}

// A hot upgrade whose new code raises a huge error: the reload's warning
// kept the error whole, so /healthz (no token needed) answered twice its
// size (67 MB for 32 MiB) after each such reload, and the log line of
// the failed upgrade was cut only by the logging backstop (64 KiB).
func TestLargeUpgradeErrorsAreCutWhereShown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "up.lua")
	const serve = `main = function()
  local events = process.events()
  while true do
    if events:receive().kind == "UPGRADE" then process.upgrade("state") end
  end
end }`
	if err := os.WriteFile(src, []byte("return { "+serve), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - name: up
    kind: process.lua
    source: file://up.lua
    on_reload: upgrade
    lifecycle: {auto_start: true}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := start(t, "run", "--log-format", "json", "--http", "127.0.0.1:0", filepath.Join(dir, "c.yaml"))
	addr := r.httpAddr(t)
	// "started" comes once the runner watches its files: a save from then
	// on reloads on its own event (one before it, while the entries start,
	// waits for the watcher's rescan a debounce period later).
	r.waitFor(t, "app:up running, the files watched", func() bool {
		_, body := httpGet(t, "http://"+addr+"/v1/entries/app:up")
		return strings.Contains(body, `"running"`) && strings.Contains(r.logs(), `"msg":"started"`)
	})
	raise := `return { upgrade = function() error(string.rep("U", 8 * 1024 * 1024)) end, ` + serve
	if err := os.WriteFile(src, []byte(raise), 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "the upgrade failed, in the reload's warnings", func() bool {
		_, body := httpGet(t, "http://"+addr+"/healthz")
		return strings.Contains(body, "upgrade app:up: failed")
	})
	for _, path := range []string{"/healthz", "/v1/reload"} {
		code, body := httpGet(t, "http://"+addr+path)
		if code != 200 || len(body) > 64<<10 || !strings.Contains(body, "bytes cut)") {
			t.Errorf("%s: %d, %d bytes: %.300s", path, code, len(body), body)
		}
	}
	r.mu.Lock()
	for _, line := range r.stderr {
		if len(line) > 16<<10 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
	r.mu.Unlock()
}
