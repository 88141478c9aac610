package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// attackerLua is what issue 10 found a script could do to the runtime:
// the root supervisor's PID is the node's first, built from process.pid().
const attackerLua = `
local function root()
  local node, _, creation = process.pid():match("^<(.+)%.(%d+)%.(%d+)>$")
  return "<" .. node .. ".1." .. creation .. ">"
end
return { main = function(mode)
  if mode == "terminate" then
    local ok, err = process.terminate(root())
    if ok then return "terminated" end
    return err.kind .. ": " .. err.message
  elseif mode == "link" then
    assert(process.link(root()))
    error("crash while linked to the root")
  elseif mode == "watcher" then
    -- --main's watcher is spawned just before the main process
    local node, id, creation = process.pid():match("^<(.+)%.(%d+)%.(%d+)>$")
    local ok, err = process.terminate("<" .. node .. "." .. (tonumber(id) - 1) .. "." .. creation .. ">")
    assert(not ok and err.kind == "invalid", "terminated the watcher")
    return "ok"
  elseif mode == "squat" then
    local ok, err = process.register("app:svc")
    if ok then return "registered" end
    return err.kind .. ": " .. err.message
  end
end }
`

const protectYAML = `namespace: app
entries:
  - name: svc
    kind: process.lua
    source: file://svc.lua
    lifecycle: {auto_start: true, restart: {initial_delay: 10ms}}
  - {name: attacker, kind: process.lua, source: file://attacker.lua}
  - name: core
    kind: supervisor
    lifecycle: {auto_start: true}
    children: [{id: w, process: svc}]
`

const svcLua = `return { main = function()
  local inbox = process.inbox()
  while true do
    local m = inbox:receive()
    if m:topic() == "crash" then error("asked to crash") end
    m:reply("pong")
  end
end }
`

func writeProtectConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"c.yaml": protectYAML, "svc.lua": svcLua, "attacker.lua": attackerLua} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "c.yaml")
}

// runEntry spawns a process.lua entry monitored by a watcher and returns
// its exit.
func runEntry(t *testing.T, a *app, id registry.ID, args ...any) process.Exit {
	t.Helper()
	done, err := spawnMain(a.node, a.rt, id, args)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-done:
		return e
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return", id)
		return process.Exit{}
	}
}

// TestScriptCannotTakeTheRuntimeDown: issue 10's attacks, from a script.
// The root's PID is as guessable as ever, but terminating it is an error
// the script sees, a crash while linked to it is ignored, an entry's name
// cannot be taken, and crashed services are still restarted.
func TestScriptCannotTakeTheRuntimeDown(t *testing.T) {
	r := runInProcess(t, "--no-watch", "--log-format", "json", writeProtectConfig(t))
	a := r.app
	if a.root.PID().ID != 1 {
		t.Fatalf("root pid %s: the attack script assumes the node's first", a.root.PID())
	}
	if e := runEntry(t, a, "app:attacker", "terminate"); e.Err != nil || !strings.HasPrefix(e.Value.(string), "invalid: ") || !strings.Contains(e.Value.(string), "belongs to the runtime") {
		t.Fatalf("terminate the root: %+v", e)
	}
	if e := runEntry(t, a, "app:attacker", "link"); e.Err == nil {
		t.Fatalf("the linked attacker did not crash: %+v", e)
	}
	if e := runEntry(t, a, "app:attacker", "squat"); e.Err != nil || !strings.Contains(e.Value.(string), "reserved for entries") {
		t.Fatalf("register an entry's name: %+v", e)
	}
	for _, sup := range []registry.ID{"app:core"} {
		inst, _ := a.rt.Instance(sup)
		if e := a.node.TerminateFrom(process.PID{}, inst.PID()); e == nil {
			t.Fatalf("%s: an untrusted terminate succeeded", sup)
		}
	}
	// Crash the service: the root, alive, restarts it.
	old, _ := a.rt.Instance("app:svc")
	if err := a.node.Send(old.PID(), process.Message{Topic: "crash"}); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyExplained(t, 20*time.Second, "app:svc restarted by the root", func() bool {
		in, ok := a.rt.Instance("app:svc")
		return ok && in.PID() != old.PID() && a.node.Alive(in.PID())
	}, r.stderr.String)
	if !a.root.Alive() {
		t.Fatalf("the root died: %v", a.root.Exit())
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, r.stderr.String())
	}
}

// TestRootDeathExitsNonZero: should the root supervisor die anyway,
// nothing would restart a failed entry: the runner says so and exits 1.
func TestRootDeathExitsNonZero(t *testing.T) {
	r := runInProcess(t, "--no-watch", "--log-format", "json", writeProtectConfig(t))
	r.app.node.Kill(r.app.root.PID())
	if code := r.wait(t); code != 1 {
		t.Fatalf("exit %d after the root died, want 1:\n%s", code, r.stderr.String())
	}
	if logs := r.stderr.String(); !strings.Contains(logs, `"msg":"root supervisor died: failed entries would no longer be restarted; stopping"`) ||
		!strings.Contains(logs, `"error":"killed"`) {
		t.Fatalf("no clear log line:\n%s", logs)
	}
}

// TestMainWatcherIsTheRuntimes: --main's watcher (whose PID is the one
// before the main process's) cannot be terminated by a script, which would
// leave the runner waiting for ever.
func TestMainWatcherIsTheRuntimes(t *testing.T) {
	r := runInProcess(t, "--no-watch", "--log-format", "json", "--main", "app:attacker", writeProtectConfig(t), "--", "watcher")
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, r.stderr.String())
	}
}
