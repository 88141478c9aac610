package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/registry"
)

// TestEveryEntryIsRegisteredUnderItsID: the process of every running entry
// — a Lua service, a pool, a group router, a supervisor of each kind, a pg
// scope on a node alone — is reachable by its entry ID (OTP registers
// supervisors and pg scopes locally by name too); a tree nested in another
// is not (one entry may run many times). A scope or supervisor asked a
// question answers with an error instead of letting the ask time out.
func TestEveryEntryIsRegisteredUnderItsID(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "w.lua"), []byte(`return { main = function()
  local inbox = process.inbox()
  while true do local m = inbox:receive(); m:reply(process.lookup("app:pg") ~= nil and process.lookup("app:core") ~= nil) end
end }
`), 0o644)
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(`namespace: app
entries:
  - {name: pg, kind: pg.scope, lifecycle: {auto_start: true}}
  - {name: w, kind: process.lua, source: file://w.lua, lifecycle: {auto_start: true}}
  - {name: pool, kind: router.pool, routee: w, size: 1, lifecycle: {auto_start: true}}
  - {name: group, kind: router.group, scope: pg, group: g, lifecycle: {auto_start: true}}
  - name: core
    kind: supervisor
    lifecycle: {auto_start: true}
    children: [{id: a, process: w}, {id: nested, process: inner}]
  - {name: inner, kind: supervisor, children: [{id: b, process: w}]}
  - {name: dyn, kind: supervisor.dynamic, lifecycle: {auto_start: true}}
  - {name: parts, kind: supervisor.partition, process: w, partitions: 2, lifecycle: {auto_start: true}}
`), 0o644)
	tok := tokenFile(t, "0123456789abcdef0123456789abcdef")
	r := runInProcess(t, "--log-format", "json", "--no-watch", "--http", "127.0.0.1:0", "--http-token-file", tok, cfg)
	for _, id := range []string{"app:pg", "app:w", "app:pool", "app:group", "app:core", "app:dyn", "app:parts"} {
		pid, ok := r.app.node.Whereis(id)
		in, found := r.app.rt.Info(registry.ID(id))
		if !ok || !found || in.Instance == nil || in.Instance.PID() != pid {
			t.Errorf("%s: registered %v (%s), entry %v", id, ok, pid, found)
		}
	}
	if pid, ok := r.app.node.Whereis("app:inner"); ok {
		t.Errorf("the nested tree holds app:inner: %s", pid)
	}
	addr := r.app.n.HTTPAddr().String()
	if code, out, errs := runCLI("ask", "--http-token-file", tok, addr, "app:w", "look"); code != 0 || strings.TrimSpace(out) != "true" {
		t.Errorf("process.lookup from Lua: exit %d %q %s", code, out, errs)
	}
	for id, want := range map[string]string{
		"app:pg":   "invalid: pg scope app:pg: a pg scope takes no messages; use the pg module",
		"app:core": "invalid: supervisor app:core: a supervisor takes no messages; use the supervisor module",
	} {
		if code, _, errs := runCLI("ask", "--http-token-file", tok, "--timeout", "2s", addr, id, "hello"); code != 1 || !strings.Contains(errs, "the reply is an error: "+want) {
			t.Errorf("ask %s: exit %d %s", id, code, errs)
		}
	}
	r.stop(t)
}
