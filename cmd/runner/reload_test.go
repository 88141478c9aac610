package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The editors' ways of saving.
func saveRename(t *testing.T, p, body string) {
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".swp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

func saveBackup(t *testing.T, p, body string) {
	if err := os.Rename(p, p+"~"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(p + "~")
}

func saveChunks(t *testing.T, p, body string) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	n := len(body) / 3
	for i, c := range []string{body[:n], body[n : 2*n], body[2*n:]} {
		if i > 0 {
			time.Sleep(15 * time.Millisecond)
		}
		f.WriteString(c)
	}
	f.Close()
}

// paused runs save with the runner stopped (SIGSTOP), and lets it go on
// once save returns. The file events of every write save makes are then
// queued by the kernel and read by the runner together, so its debounce
// sees one burst whatever the machine's load does to the time between
// the writes: an editor's save in several steps (a backup rename and a
// write, a write in chunks) is never reloaded half-done, and a burst of
// saves is one reload. How the debounce treats time is registry's own
// test (TestWatchBurst); this one checks what the runner makes of the
// events.
func (r *runner) paused(t *testing.T, save func()) {
	t.Helper()
	p := r.cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}()
	// The signal is only queued when Signal returns: wait until every
	// thread of the runner has stopped.
	r.waitFor(t, "the runner stopped", func() bool { return processStopped(p.Pid) })
	save()
}

// processStopped reports whether every thread of process pid is stopped
// (state T in /proc/pid/task/*/stat).
func processStopped(pid int) bool {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			return false // a thread that just exited: look again
		}
		// "tid (comm) S ...": the state follows the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return len(stats) > 0
}

const reloadLua = `return { main = function() local inbox = process.inbox(); while true do inbox:receive() end end }
`

func reloadYAML(extra string, timeout string) string {
	return `namespace: app
entries:
  - {name: counter, kind: process.lua, source: file://w.lua, lifecycle: {auto_start: true}}
  - {name: scope, kind: pg.scope, protocol_timeout: ` + timeout + `, lifecycle: {auto_start: true}}
` + extra
}

func TestReloadEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "c.yaml")
	os.WriteFile(c, []byte(reloadYAML("", "5s")), 0o644)
	os.WriteFile(filepath.Join(dir, "w.lua"), []byte(reloadLua), 0o644)
	os.WriteFile(filepath.Join(dir, "d.yaml"), []byte("namespace: other\nentries:\n  - {name: w, kind: process.lua, source: file://w.lua, lifecycle: {auto_start: true}}\n"), 0o644)
	r := start(t, "run", "--log-format", "json", "--log-level", "debug", "--http", "127.0.0.1:0", dir)
	base := "http://" + r.httpAddr(t)
	pid := func(id string) string {
		code, body := httpGet(t, base+"/v1/entries/"+id)
		if code != 200 {
			return ""
		}
		var d struct {
			PID    string `json:"pid"`
			Status string `json:"status"`
		}
		json.Unmarshal([]byte(body), &d)
		if d.Status != "running" {
			return ""
		}
		return d.PID
	}
	waitFor := func(what string, cond func() bool) { t.Helper(); r.waitFor(t, what, cond) }
	// "started" comes once the runner watches its files: a save from then
	// on reloads on its own event (one before it, while the entries start,
	// waits for the watcher's rescan a debounce period later).
	waitFor("start", func() bool {
		return strings.Contains(r.logs(), `"msg":"started"`) && pid("app:counter") != "" && pid("app:scope") != "" && pid("other:w") != ""
	})
	counter, scope := pid("app:counter"), pid("app:scope")
	applied := func() int { return strings.Count(r.logs(), `"msg":"reload applied: `) }

	// add
	extra := "  - {name: extra, kind: process.lua, source: file://w.lua, lifecycle: {auto_start: true}}\n"
	r.paused(t, func() { saveRename(t, c, reloadYAML(extra, "5s")) })
	waitFor("extra added", func() bool { return pid("app:extra") != "" })
	// update in place: a scope's timeouts apply without a restart
	r.paused(t, func() { saveBackup(t, c, reloadYAML(extra, "7s")) })
	waitFor("scope updated", func() bool { return strings.Contains(r.logs(), `updated=1`) })
	if pid("app:scope") != scope || pid("app:counter") != counter {
		t.Fatalf("in-place update restarted something; logs:\n%s", r.logs())
	}
	// update by restart: a new Lua source restarts what runs it
	extraPID := pid("app:extra")
	r.paused(t, func() { saveChunks(t, filepath.Join(dir, "w.lua"), reloadLua+"-- v2\n") })
	waitFor("counter restarted", func() bool { p := pid("app:counter"); return p != "" && p != counter })
	waitFor("extra restarted", func() bool { p := pid("app:extra"); return p != "" && p != extraPID })
	counter = pid("app:counter")
	if pid("app:scope") != scope {
		t.Fatal("a source change restarted the scope")
	}
	// a broken file: nothing changes, the error is logged with its position
	before := applied()
	r.paused(t, func() {
		saveChunks(t, c, reloadYAML(extra+"  - {name: bad, kind: process.lua, source: file://w.lua, mailbox_sise: 1}\n", "7s"))
	})
	waitFor("broken file rejected", func() bool { return strings.Contains(r.logs(), `c.yaml:6:58: app:bad: mailbox_sise: unknown field`) })
	// a broken Lua source: the same
	r.paused(t, func() { saveRename(t, c, reloadYAML(extra, "7s")) })
	waitFor("fix applied", func() bool { return applied() > before })
	before = applied()
	r.paused(t, func() { saveRename(t, filepath.Join(dir, "w.lua"), "return { main = function( end }\n") })
	waitFor("broken source rejected", func() bool { return strings.Contains(r.logs(), `c.yaml:3:48: app:counter: source: syntax error: `) })
	if pid("app:counter") != counter || applied() != before {
		t.Fatal("a broken source changed the running state")
	}
	r.paused(t, func() { saveRename(t, filepath.Join(dir, "w.lua"), reloadLua) })
	waitFor("source fix applied", func() bool { p := pid("app:counter"); return p != "" && p != counter })
	// remove an entry, then delete a file
	r.paused(t, func() { saveRename(t, c, reloadYAML("", "7s")) })
	waitFor("extra removed", func() bool { code, _ := httpGet(t, base+"/v1/entries/app:extra"); return code == 404 })
	os.Remove(filepath.Join(dir, "d.yaml"))
	waitFor("d.yaml's entries removed", func() bool { code, _ := httpGet(t, base+"/v1/entries/other:w"); return code == 404 })
	// a burst of 50 saves: one reload (two if the runner happens to stall
	// for a debounce period while it reads the events)
	before = applied()
	r.paused(t, func() {
		for i := 1; i <= 50; i++ {
			saveRename(t, c, reloadYAML("", fmt.Sprintf("%dms", 1000+i)))
		}
	})
	waitFor("burst applied", func() bool { return applied() > before })
	// Then a change whose reload shows (a new entry): a late reload of
	// the burst would come before it.
	const addedOne = `"msg":"reload applied: added=1 `
	added := strings.Count(r.logs(), addedOne)
	marker := "  - {name: marker, kind: process.lua, source: file://w.lua, lifecycle: {auto_start: true}}\n"
	r.paused(t, func() { saveRename(t, c, reloadYAML(marker, "1050ms")) })
	waitFor("marker added", func() bool { return pid("app:marker") != "" })
	waitFor("the marker's reload logged", func() bool { return strings.Count(r.logs(), addedOne) > added })
	logs := r.logs()
	if n := strings.Count(logs[:strings.LastIndex(logs, addedOne)], `"msg":"reload applied: `) - before; n < 1 || n > 2 {
		t.Fatalf("%d reloads for a burst of 50 saves; logs:\n%s", n, logs)
	}
	code, body := httpGet(t, base+"/v1/entries/app:scope")
	if code != 200 || !strings.Contains(body, `"status": "running"`) || pid("app:scope") != scope {
		t.Fatalf("scope: %d %s", code, body)
	}
	if _, metrics := httpGet(t, base+"/metrics"); !strings.Contains(metrics, `runner_reload_total{result="rejected"} 2`) {
		t.Fatalf("reload metrics:\n%s", metrics)
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestReloadRenewsRouteesAndSupervisedChildren: a new Lua source reaches a
// pool's routees (replaced in place, the pool keeps its PID) and a
// supervisor's child (restarted through its supervisor).
func TestReloadRenewsRouteesAndSupervisedChildren(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	worker := func(v string) string {
		return `return { main = function()
  log.info("worker up", {version = "` + v + `"})
  local inbox = process.inbox()
  while true do local m = inbox:receive(); m:reply("` + v + `") end
end }
`
	}
	os.WriteFile(filepath.Join(dir, "worker.lua"), []byte(worker("v1")), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - {name: worker, kind: process.lua, source: file://worker.lua}
  - {name: pool, kind: router.pool, routee: worker, size: 2, lifecycle: {auto_start: true}}
  - name: sup
    kind: supervisor
    lifecycle: {auto_start: true}
    children: [{id: w, process: worker}]
`), 0o644)
	r := start(t, "run", "--log-format", "json", "--http", "127.0.0.1:0", dir)
	base := "http://" + r.httpAddr(t)
	view := func(id string, v any) bool {
		code, body := httpGet(t, base+"/v1/entries/"+id)
		if code != 200 {
			return false
		}
		var d struct {
			PID  string          `json:"pid"`
			View json.RawMessage `json:"view"`
		}
		if json.Unmarshal([]byte(body), &d) != nil || len(d.View) == 0 {
			return false
		}
		return json.Unmarshal(d.View, v) == nil
	}
	type poolView struct {
		Routees []string `json:"routees"`
	}
	type supView struct {
		Children []struct {
			PID *string `json:"pid"`
		} `json:"children"`
	}
	waitFor := func(what string, cond func() bool) { t.Helper(); r.waitFor(t, what, cond) }
	var pv poolView
	var sv supView
	waitFor("pool and supervisor up", func() bool {
		return view("app:pool", &pv) && len(pv.Routees) == 2 && view("app:sup", &sv) && len(sv.Children) == 1 && sv.Children[0].PID != nil
	})
	oldRoutees, oldChild := pv.Routees, *sv.Children[0].PID
	// The logs arrive through a pipe a little after the views change.
	waitFor("three workers up on v1, the files watched", func() bool {
		return strings.Count(r.logs(), `"version":"v1"`) == 3 && strings.Contains(r.logs(), `"msg":"started"`)
	})
	saveRename(t, filepath.Join(dir, "worker.lua"), worker("v2"))
	waitFor("three workers up on v2", func() bool { return strings.Count(r.logs(), `"version":"v2"`) == 3 })
	waitFor("routees renewed", func() bool {
		var now poolView
		if !view("app:pool", &now) || len(now.Routees) != 2 {
			return false
		}
		for _, p := range now.Routees {
			for _, o := range oldRoutees {
				if p == o {
					return false
				}
			}
		}
		return true
	})
	waitFor("child restarted", func() bool {
		var now supView
		return view("app:sup", &now) && len(now.Children) == 1 && now.Children[0].PID != nil && *now.Children[0].PID != oldChild
	})
	r.cmd.Process.Signal(syscall.SIGTERM)
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestSIGHUPReloadsWithoutWatching: with --no-watch a saved file changes
// nothing until SIGHUP, which reloads it.
func TestSIGHUPReloadsWithoutWatching(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "c.yaml")
	os.WriteFile(c, []byte(reloadYAML("", "5s")), 0o644)
	os.WriteFile(filepath.Join(dir, "w.lua"), []byte(reloadLua), 0o644)
	r := start(t, "run", "--log-format", "json", "--no-watch", "--http", "127.0.0.1:0", c)
	base := "http://" + r.httpAddr(t)
	waitFor := func(what string, cond func() bool) { t.Helper(); r.waitFor(t, what, cond) }
	waitFor("start", func() bool { return strings.Contains(r.logs(), `"msg":"started"`) })
	saveRename(t, c, reloadYAML("  - {name: extra, kind: process.lua, source: file://w.lua, lifecycle: {auto_start: true}}\n", "5s"))
	time.Sleep(300 * time.Millisecond) // three debounce periods: a watcher would have reloaded by now
	if code, _ := httpGet(t, base+"/v1/entries/app:extra"); code != 404 {
		t.Fatalf("--no-watch reloaded a saved file; logs:\n%s", r.logs())
	}
	r.cmd.Process.Signal(syscall.SIGHUP)
	waitFor("the SIGHUP reload", func() bool {
		code, body := httpGet(t, base+"/v1/entries/app:extra")
		return code == 200 && strings.Contains(body, `"status": "running"`)
	})
	r.cmd.Process.Signal(syscall.SIGTERM)
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
