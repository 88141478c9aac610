package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const (
	roomLua = `return { main = function(name)
  log.info("room up", {room = name, version = "VERSION"})
  local inbox = process.inbox()
  while true do local m = inbox:receive(); m:reply("VERSION") end
end }
`
	lobbyLua = `local supervisor = require("supervisor")
return { main = function()
  assert(supervisor.start_child("app:rooms", {id = "r1", process = "room", args = {"r1"}}))
  assert(supervisor.start_child("app:rooms", {id = "r2", process = "room", args = {"r2"}}))
  assert(supervisor.start_child("app:rooms", {id = "r3", process = "room", args = {"r3"}, on_reload = "keep"}))
  assert(process.spawn("app:room", "loner"))
  log.info("lobby ready")
  local inbox = process.inbox()
  while true do inbox:receive() end
end }
`
	migrateLua = `return { main = function()
  log.info("migrating")
  time.sleep(300)
  log.info("migrated")
end }
`
	serviceLua = `return { main = function(token)
  assert(#token > 10, "no token")
  log.info("service up")
  local inbox = process.inbox()
  while true do inbox:receive() end
end }
`
	roomsYAML = `namespace: app
entries:
  - {name: room, kind: process.lua, source: file://room.lua}
  - name: rooms
    kind: supervisor.dynamic
    lifecycle: {auto_start: true}
  - name: lobby
    kind: process.lua
    source: file://lobby.lua
    lifecycle: {auto_start: true, depends_on: [rooms]}
  - name: migrate
    kind: process.lua
    source: file://migrate.lua
    lifecycle:
      auto_start: true
      restart: {type: transient}
  - name: service
    kind: process.lua
    source: file://service.lua
    args: ["${env:API_TOKEN}"]
    lifecycle: {auto_start: true, depends_on: [migrate], stop_timeout: 2s}
  - name: pool
    kind: router.pool
    routee: room
    size: ${env:POOL_SIZE:-1}
    lifecycle: {auto_start: true}
`
	apiToken = "tok-0123456789-secret"
)

// TestReloadReachesEveryChild edits a running configuration as a user
// would and checks what issue 14 asks of it:
//   - migrations run, then the service starts (migrate is a transient task,
//     completed and ready);
//   - ${env:…}: the pool's size is an integer from the environment, and a
//     token from it reaches the script but no log line and no /v1 view;
//   - a new room.lua restarts the rooms a script started with start_child
//     (new PIDs, through their supervisor), keeps the one that says
//     on_reload: keep, and leaves the one the script spawned outside any
//     supervisor on its old code, counted as outdated (in /v1/entries, the
//     metric and one warning line);
//   - reload status: the counters exist at 0 from the start, /v1/reload
//     says how the last reload went, and a rejected reload keeps /healthz
//     healthy but shows it.
func TestReloadReachesEveryChild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("c.yaml", roomsYAML)
	write("room.lua", strings.ReplaceAll(roomLua, "VERSION", "v1"))
	write("lobby.lua", lobbyLua)
	write("migrate.lua", migrateLua)
	write("service.lua", serviceLua)
	r := startEnv(t, []string{"POOL_SIZE=2", "API_TOKEN=" + apiToken},
		"run", "--log-format", "json", "--log-level", "debug", "--http", "127.0.0.1:0", dir)
	var base string
	select {
	case a := <-r.addr:
		base = "http://" + a
	case err := <-r.done:
		t.Fatalf("runner exited (%v):\n%s", err, r.logs())
	}
	waitFor := func(what string, cond func() bool) { t.Helper(); r.waitFor(t, what, cond) }
	getJSON := func(path string, v any) bool {
		t.Helper()
		code, body := httpGet(t, base+path)
		return code == 200 && json.Unmarshal([]byte(body), v) == nil
	}
	metrics := func() string { _, body := httpGet(t, base+"/metrics"); return body }
	type entry struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Outdated int    `json:"outdated"`
	}
	entryOf := func(id string) entry {
		var list []entry
		getJSON("/v1/entries", &list)
		for _, e := range list {
			if e.ID == id {
				return e
			}
		}
		return entry{}
	}
	rooms := func() map[string]string {
		var d struct {
			View struct {
				Children []struct {
					ID  string  `json:"id"`
					PID *string `json:"pid"`
				} `json:"children"`
			} `json:"view"`
		}
		out := map[string]string{}
		if getJSON("/v1/entries/app:rooms", &d) {
			for _, c := range d.View.Children {
				if c.PID != nil {
					out[c.ID] = *c.PID
				}
			}
		}
		return out
	}

	// Start-up: migrations, then the service.
	if m := metrics(); !strings.Contains(m, `runner_reload_total{result="applied"} 0`) || !strings.Contains(m, `runner_reload_total{result="rejected"} 0`) ||
		!strings.Contains(m, "runner_reload_last_success 1") {
		t.Fatalf("reload metrics before any reload:\n%s", m)
	}
	waitFor("start-up done", func() bool {
		// "service up" is the service's own line, from its main: it can
		// come just after the runner's "started", which follows the
		// entry's start, not its script's first line.
		logs := r.logs()
		return strings.Contains(logs, `"msg":"started"`) && strings.Contains(logs, `"msg":"lobby ready"`) && strings.Contains(logs, `"msg":"service up"`) && len(rooms()) == 3
	})
	logs := r.logs()
	if i, j := strings.Index(logs, `"msg":"migrated"`), strings.Index(logs, `"msg":"service up"`); i < 0 || j < 0 || j < i {
		t.Fatalf("the service did not wait for the migrations (migrated at %d, service up at %d):\n%s", i, j, logs)
	}
	if e := entryOf("app:migrate"); e.Status != "completed" {
		t.Fatalf("migrate %+v", e)
	}
	if code, body := httpGet(t, base+"/readyz"); code != 200 {
		t.Fatalf("readyz %d %s", code, body)
	}
	var pool struct {
		View struct {
			Size int `json:"size"`
		} `json:"view"`
	}
	if !getJSON("/v1/entries/app:pool", &pool) || pool.View.Size != 2 {
		t.Fatalf("pool size from POOL_SIZE: %+v", pool)
	}

	// New room code.
	before := rooms()
	write("room.lua", strings.ReplaceAll(roomLua, "VERSION", "v2"))
	waitFor("rooms r1 and r2 restarted on the new code", func() bool {
		now := rooms()
		return now["r1"] != "" && now["r1"] != before["r1"] && now["r2"] != "" && now["r2"] != before["r2"]
	})
	if now := rooms(); now["r3"] != before["r3"] {
		t.Fatalf("r3 (on_reload: keep) was restarted: %v -> %v", before, now)
	}
	waitFor("r1, r2 and two routees up on v2", func() bool { return strings.Count(r.logs(), `"version":"v2"`) == 4 })
	if e := entryOf("app:room"); e.Outdated != 2 {
		t.Fatalf("app:room %+v: r3 and the loner run the old code", e)
	}
	if m := metrics(); !strings.Contains(m, `runner_outdated_processes{entry="app:room"} 2`) || !strings.Contains(m, `runner_reload_total{result="applied"} 1`) {
		t.Fatalf("metrics:\n%s", m)
	}
	// The log reaches the test through a pipe, after the metrics: wait
	// for the warning before counting.
	waitFor("the warning about outdated processes", func() bool {
		return strings.Contains(r.logs(), "reload left processes on old code")
	})
	if n := strings.Count(r.logs(), "reload left processes on old code"); n != 1 {
		t.Fatalf("%d warnings about outdated processes, want 1:\n%s", n, r.logs())
	}
	var last struct {
		Result   string   `json:"result"`
		Updated  int      `json:"updated"`
		Outdated int      `json:"outdated"`
		Errors   []string `json:"errors"`
	}
	if !getJSON("/v1/reload", &last) || last.Result != "applied" || last.Updated < 1 || last.Outdated != 2 || len(last.Errors) != 0 {
		t.Fatalf("/v1/reload %+v", last)
	}

	// A rejected reload: nothing changes, the node stays healthy, and says so.
	write("c.yaml", roomsYAML+"  - {name: bad, kind: process.lua, source: file://room.lua, mailbox_sise: 1}\n")
	waitFor("the rejection", func() bool { return getJSON("/v1/reload", &last) && last.Result == "rejected" })
	if len(last.Errors) != 1 || !strings.HasSuffix(last.Errors[0], `c.yaml:27:61: app:bad: mailbox_sise: unknown field (did you mean "mailbox_size"?)`) {
		t.Fatalf("errors %q", last.Errors)
	}
	code, body := httpGet(t, base+"/healthz")
	if code != 200 || !strings.Contains(body, `"reload": "last reload rejected at`) {
		t.Fatalf("healthz after a rejected reload: %d %s", code, body)
	}
	if m := metrics(); !strings.Contains(m, "runner_reload_last_success 0") || !strings.Contains(m, `runner_reload_total{result="rejected"} 1`) {
		t.Fatalf("metrics:\n%s", m)
	}

	// The token never showed.
	for _, path := range []string{"/v1/entries/app:service", "/v1/entries", "/v1/supervisors"} {
		if _, body := httpGet(t, base+path); strings.Contains(body, apiToken) {
			t.Fatalf("%s shows the token: %s", path, body)
		}
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(r.logs(), apiToken) {
		t.Fatalf("the logs show the token:\n%s", r.logs())
	}
}
