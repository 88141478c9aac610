package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// upgradeCounter is a counter that ticks on its own and upgrades when a
// reload offers its new code, handing over its count. code names the
// version in its log lines; migrate is the new code's upgrade function.
func upgradeCounter(code, migrate string) string {
	return `return {
  upgrade = ` + migrate + `,
  main = function(count)
    count = count or 0
    local events = process.events()
    while true do
      local r = channel.select{ events:case_receive(), time.after(15):case_receive() }
      if r.channel == events then
        if r.value.kind == "UPGRADE" then process.upgrade(count) end
      else
        count = count + 1
        log.info("tick", {count = count, code = "` + code + `"})
      end
    end
  end,
}
`
}

// upgradeWorker serves asks and upgrades when offered; it logs each time
// its main starts, so a test sees which PIDs run which code.
func upgradeWorker(code string) string {
	return `return { main = function()
  log.info("main", {code = "` + code + `"})
  local inbox, events = process.inbox(), process.events()
  while true do
    local r = channel.select{ inbox:case_receive(), events:case_receive() }
    if r.channel == events then
      if r.value.kind == "UPGRADE" then process.upgrade() end
    else
      -- "which" says who answers too: the code and the PID.
      if r.value:topic() == "which" then
        r.value:reply("` + code + ` " .. process.pid())
      else
        r.value:reply("` + code + `")
      end
    end
  end
end }
`
}

type logLine struct {
	Msg   string  `json:"msg"`
	PID   string  `json:"pid"`
	Entry string  `json:"entry"`
	Code  string  `json:"code"`
	Count float64 `json:"count"`
}

func logLines(r *runner, msg string) []logLine {
	var out []logLine
	for _, l := range strings.Split(r.logs(), "\n") {
		var ll logLine
		if json.Unmarshal([]byte(l), &ll) == nil && ll.Msg == msg {
			out = append(out, ll)
		}
	}
	return out
}

// TestReloadUpgradesInPlace: the files of a running runner are edited, and
// the processes that say on_reload: upgrade move to the new code in place:
// the counter's count goes on from where it was, under the same PID; a
// pool's routees and a partition's workers keep their PIDs. /v1/reload and
// runner_upgrades_total count the upgrades. Then new code whose upgrade
// raises: the counter crashes, the root supervisor restarts it on the new
// code, and the reload is degraded with the error.
func TestReloadUpgradesInPlace(t *testing.T) {
	dir := t.TempDir()
	counter, worker := filepath.Join(dir, "counter.lua"), filepath.Join(dir, "worker.lua")
	os.WriteFile(counter, []byte(upgradeCounter("v1", "nil")), 0o644)
	os.WriteFile(worker, []byte(upgradeWorker("v1")), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - {name: counter, kind: process.lua, source: file://counter.lua, on_reload: upgrade, lifecycle: {auto_start: true}}
  - {name: worker, kind: process.lua, source: file://worker.lua, on_reload: upgrade, upgrade_timeout: 2s}
  - {name: pool, kind: router.pool, routee: worker, size: 2, lifecycle: {auto_start: true}}
  - {name: part, kind: supervisor.partition, process: worker, partitions: 2, lifecycle: {auto_start: true}}
`), 0o644)
	tok := tokenFile(t, "0123456789abcdef0123456789abcdef")
	r := start(t, "run", "--log-format", "json", "--http", "127.0.0.1:0", "--http-token-file", tok, dir)
	addr := r.httpAddr(t)
	base := "http://" + addr
	// Which partition worker answers each key: the same one, under the
	// same PID, before and after the upgrade.
	keys := []string{"user-1", "user-2", "user-3", "user-4", "user-5", "user-6"}
	askKeys := func(code string) map[string]string {
		t.Helper()
		owner := map[string]string{}
		for _, k := range keys {
			rc, out, errs := runCLI("ask", "--http-token-file", tok, "--key", k, addr, "app:part", "which")
			var reply string
			if rc != 0 || json.Unmarshal([]byte(out), &reply) != nil {
				t.Fatalf("ask --key %s app:part: rc %d, %q %q", k, rc, out, errs)
			}
			got, pid, _ := strings.Cut(reply, " ")
			if got != code {
				t.Fatalf("ask --key %s app:part: %q answered, want code %s", k, reply, code)
			}
			owner[k] = pid
		}
		return owner
	}
	type attempt struct {
		Result   string `json:"result"`
		Updated  int    `json:"updated"`
		Upgrades struct {
			OK      int `json:"ok"`
			Timeout int `json:"timeout"`
			Failed  int `json:"failed"`
		} `json:"upgrades"`
		Warnings []string `json:"warnings"`
	}
	lastReload := func() (attempt, bool) {
		var a attempt
		code, body := httpGet(t, base+"/v1/reload")
		return a, code == 200 && json.Unmarshal([]byte(body), &a) == nil && a.Result != ""
	}
	r.waitFor(t, "the counter ticking, four workers, the files watched", func() bool {
		return len(logLines(r, "tick")) >= 3 && len(logLines(r, "main")) == 4 && strings.Contains(r.logs(), `"msg":"started"`)
	})
	v1Workers := map[string]bool{}
	for _, l := range logLines(r, "main") {
		v1Workers[l.PID] = true
	}
	v1Owners := askKeys("v1")

	saveRename(t, counter, upgradeCounter("v2", "function(count) return count + 1000 end"))
	saveRename(t, worker, upgradeWorker("v2"))
	var a attempt
	r.waitFor(t, "a reload that upgraded five processes", func() bool {
		var ok bool
		a, ok = lastReload()
		return ok && a.Upgrades.OK == 5
	})
	if a.Result != "applied" || a.Upgrades.Timeout != 0 || a.Upgrades.Failed != 0 || len(a.Warnings) != 0 {
		t.Fatalf("last reload %+v", a)
	}
	// The log says which process upgraded, not only how many.
	r.waitFor(t, "the counter's upgrade logged", func() bool {
		for _, l := range logLines(r, "upgraded in place") {
			if l.Entry == "app:counter" && l.PID != "" {
				return true
			}
		}
		return false
	})
	r.waitFor(t, "the counter ticking on v2", func() bool {
		for _, l := range logLines(r, "tick") {
			if l.Code == "v2" {
				return true
			}
		}
		return false
	})
	// The count goes on: the first tick of v2 follows the last of v1
	// (+1000, the new code's upgrade), under the same PID.
	var last, first *logLine
	ticks := logLines(r, "tick")
	for i := range ticks {
		if ticks[i].Code == "v1" {
			last = &ticks[i]
		} else if first == nil {
			first = &ticks[i]
		}
	}
	if first.PID != last.PID || first.Count != last.Count+1001 {
		t.Errorf("last v1 tick %+v, first v2 tick %+v: want the same PID and the count going on", *last, *first)
	}
	// Every worker (two routees, two partition workers) runs v2 under its
	// own PID; no new process was started.
	r.waitFor(t, "four workers on v2", func() bool {
		n := 0
		for _, l := range logLines(r, "main") {
			if l.Code == "v2" {
				n++
			}
		}
		return n == 4
	})
	for _, l := range logLines(r, "main") {
		if l.Code == "v2" && !v1Workers[l.PID] {
			t.Errorf("worker %s runs v2 under a new PID (v1 PIDs %v)", l.PID, v1Workers)
		}
	}
	// Keys stay on their worker: each is answered by the v2 code under the
	// PID that answered it on v1.
	if v2Owners := askKeys("v2"); !maps.Equal(v1Owners, v2Owners) {
		t.Errorf("keys moved between partition workers: v1 %v, v2 %v", v1Owners, v2Owners)
	}
	if n := len(slices.Compact(slices.Sorted(maps.Values(v1Owners)))); n != 2 {
		t.Errorf("the keys reached %d partition workers, want both (%v)", n, v1Owners)
	}
	_, metrics := httpGet(t, base+"/metrics")
	for _, want := range []string{
		`runner_upgrades_total{entry="app:counter",result="ok"} 1`,
		`runner_upgrades_total{entry="app:worker",result="ok"} 4`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// New code that cannot migrate the state: the upgrade fails, the
	// counter crashes and is restarted on the new code, counting from 1.
	saveRename(t, counter, upgradeCounter("v3", `function() error("no migration from v2") end`))
	r.waitFor(t, "a degraded reload naming the failed upgrade", func() bool {
		var ok bool
		a, ok = lastReload()
		return ok && a.Upgrades.Failed == 1
	})
	// The upgrade's warning first; the crash counts against the reload too
	// (crashed, below), as any new code failing soon after it does.
	if len(a.Warnings) == 0 || !strings.HasPrefix(a.Warnings[0], "upgrade app:counter: failed: ") || !strings.Contains(a.Warnings[0], "no migration from v2") {
		t.Errorf("warnings %q", a.Warnings)
	}
	// The child writes the line as the upgrade fails, which may be after
	// the reload's record changed, and the test reads it through a pipe:
	// wait for it.
	r.waitFor(t, "a log line saying the counter's upgrade failed", func() bool {
		return strings.Contains(r.logs(), `"msg":"upgrade failed: the new code raised; the process crashed and restarts on the new code","entry":"app:counter"`)
	})
	r.waitFor(t, "the counter restarted on v3", func() bool {
		for _, l := range logLines(r, "tick") {
			if l.Code == "v3" && l.Count == 1 {
				return true
			}
		}
		return false
	})
	_, health := httpGet(t, base+"/healthz")
	if !strings.Contains(health, "degraded") || !strings.Contains(health, "no migration from v2") {
		t.Errorf("healthz %s", health)
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.wait(t)
}

// TestReloadUpgradeTimeoutRestarts: a process that never calls
// process.upgrade is restarted on the new code at its upgrade_timeout, as
// on_reload: restart would, and the reload says so.
func TestReloadUpgradeTimeoutRestarts(t *testing.T) {
	dir := t.TempDir()
	src := func(code string) string {
		return `return { main = function()
  log.info("main", {code = "` + code + `"})
  local inbox = process.inbox() -- never looks at its events
  while true do inbox:receive() end
end }
`
	}
	svc := filepath.Join(dir, "svc.lua")
	os.WriteFile(svc, []byte(src("v1")), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - {name: svc, kind: process.lua, source: file://svc.lua, on_reload: upgrade, upgrade_timeout: 300ms, lifecycle: {auto_start: true}}
`), 0o644)
	r := start(t, "run", "--log-format", "json", "--http", "127.0.0.1:0", dir)
	base := "http://" + r.httpAddr(t)
	r.waitFor(t, "the service running, the files watched", func() bool {
		return len(logLines(r, "main")) == 1 && strings.Contains(r.logs(), `"msg":"started"`)
	})
	saveRename(t, svc, src("v2"))
	var a struct {
		Result   string `json:"result"`
		Upgrades struct {
			OK, Timeout, Failed int
		} `json:"upgrades"`
		Warnings []string `json:"warnings"`
	}
	r.waitFor(t, "a reload whose upgrade timed out", func() bool {
		code, body := httpGet(t, base+"/v1/reload")
		return code == 200 && json.Unmarshal([]byte(body), &a) == nil && a.Result == "applied"
	})
	if a.Upgrades.Timeout != 1 || a.Upgrades.OK != 0 || len(a.Warnings) != 1 ||
		!strings.Contains(a.Warnings[0], "upgrade app:svc: timeout") || !strings.Contains(a.Warnings[0], "300ms") {
		t.Fatalf("last reload %+v", a)
	}
	r.waitFor(t, "the service restarted on v2 under a new PID", func() bool {
		ls := logLines(r, "main")
		return len(ls) == 2 && ls[1].Code == "v2" && ls[1].PID != ls[0].PID
	})
	_, metrics := httpGet(t, base+"/metrics")
	if want := `runner_upgrades_total{entry="app:svc",result="timeout"} 1`; !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %s", want)
	}

	// A rename is a removal and an addition: the new entry starts its own
	// process, nothing is offered an upgrade.
	os.WriteFile(svc, []byte(strings.Replace(upgradeWorker("v3"), "process.upgrade()", "error('offered')", 1)), 0o644)
	saveRename(t, filepath.Join(dir, "c.yaml"), `namespace: app
entries:
  - {name: svc2, kind: process.lua, source: file://svc.lua, on_reload: upgrade, lifecycle: {auto_start: true}}
`)
	var b struct {
		Added, Removed int
		Upgrades       struct{ OK, Timeout, Failed int } `json:"upgrades"`
	}
	r.waitFor(t, "the rename applied", func() bool {
		code, body := httpGet(t, base+"/v1/reload")
		return code == 200 && json.Unmarshal([]byte(body), &b) == nil && b.Added == 1
	})
	if b.Removed != 1 || b.Upgrades.OK+b.Upgrades.Timeout+b.Upgrades.Failed != 0 {
		t.Errorf("rename: %+v", b)
	}
	r.waitFor(t, "app:svc2 running v3 under a new PID", func() bool {
		ls := logLines(r, "main")
		last := ls[len(ls)-1]
		return last.Code == "v3" && last.Entry == "app:svc2" && last.PID != ls[1].PID
	})

	// A change of kind replaces the entry: its process stops, nothing is
	// offered (an offer would make v3 raise "offered").
	saveRename(t, filepath.Join(dir, "c.yaml"), `namespace: app
entries:
  - {name: svc2, kind: supervisor.dynamic, lifecycle: {auto_start: true}}
`)
	r.waitFor(t, "the kind change applied", func() bool {
		code, body := httpGet(t, base+"/v1/entries/app:svc2")
		return code == 200 && strings.Contains(body, `"supervisor.dynamic"`) && strings.Contains(body, `"running"`)
	})
	code, body := httpGet(t, base+"/v1/reload")
	if code != 200 || json.Unmarshal([]byte(body), &b) != nil || b.Upgrades.OK+b.Upgrades.Timeout+b.Upgrades.Failed != 0 || strings.Contains(r.logs(), "offered") {
		t.Errorf("kind change: %s", body)
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.wait(t)
}

// TestUpgradeRemotePIDOverCluster: across a cluster nothing special. A
// node of the test (t0) holds the PID of a service on runner n1, over TCP
// on 127.0.0.1; n1's source is edited and reloaded (SIGHUP), the service
// upgrades in place, and the same PID reaches the new code.
func TestUpgradeRemotePIDOverCluster(t *testing.T) {
	dir := t.TempDir()
	worker := filepath.Join(dir, "worker.lua")
	os.WriteFile(worker, []byte(upgradeWorker("v1")), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - {name: w, kind: process.lua, source: file://worker.lua, on_reload: upgrade, lifecycle: {auto_start: true}}
`), 0o644)
	secretFile, secret := clusterSecret(t)
	r, gossip, httpAddr := startNodeOf(t, dir, "n1", "", secretFile)
	r.waitFor(t, "the service running", func() bool { return len(logLines(r, "main")) == 1 })
	pid, err := process.ParsePID(logLines(r, "main")[0].PID)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := joinAsT0(t, gossip, secret, 1)
	askPID := func() any {
		t.Helper()
		v, _, err := self.Ask(pid, process.Message{Topic: "q"}, 10*time.Second)
		if err != nil {
			t.Fatalf("ask %s from t0: %v", pid, err)
		}
		return v
	}
	if got := askPID(); got != "v1" {
		t.Fatalf("before the upgrade: %v", got)
	}
	os.WriteFile(worker, []byte(upgradeWorker("v2")), 0o644)
	r.cmd.Process.Signal(syscall.SIGHUP)
	r.waitFor(t, "the reload to upgrade the service", func() bool {
		var a struct {
			Upgrades struct{ OK int } `json:"upgrades"`
		}
		code, body := httpGet(t, "http://"+httpAddr+"/v1/reload")
		return code == 200 && json.Unmarshal([]byte(body), &a) == nil && a.Upgrades.OK == 1
	})
	if got := askPID(); got != "v2" {
		t.Fatalf("after the upgrade, the same PID from another node: %v, want v2", got)
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.wait(t)
}

// TestChildOnReloadWinsOverEntry: a child's own on_reload decides over its
// entry's. app:worker says upgrade, app:plain (the same source) says
// nothing. Child a (worker, no on_reload of its own) upgrades in place;
// b (worker, on_reload: restart) is restarted on the new code under a new
// PID; c (plain, on_reload: upgrade in YAML) and d (plain, added with
// supervisor.start_child{on_reload = "upgrade"}) upgrade in place.
func TestChildOnReloadWinsOverEntry(t *testing.T) {
	dir := t.TempDir()
	worker := filepath.Join(dir, "worker.lua")
	os.WriteFile(worker, []byte(upgradeWorker("v1")), 0o644)
	os.WriteFile(filepath.Join(dir, "starter.lua"), []byte(`return { main = function()
  local supervisor = require("supervisor")
  assert(supervisor.start_child("app:dyn", {id = "d", process = "plain", on_reload = "upgrade"}))
end }`), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - {name: worker, kind: process.lua, source: file://worker.lua, on_reload: upgrade}
  - {name: plain, kind: process.lua, source: file://worker.lua}
  - name: sup
    kind: supervisor
    children:
      - {id: a, process: worker}
      - {id: b, process: worker, on_reload: restart}
      - {id: c, process: plain, on_reload: upgrade}
    lifecycle: {auto_start: true}
  - {name: dyn, kind: supervisor.dynamic, lifecycle: {auto_start: true}}
  - name: starter
    kind: process.lua
    source: file://starter.lua
    lifecycle: {auto_start: true, restart: {type: temporary}, depends_on: [dyn]}
`), 0o644)
	r := start(t, "run", "--log-format", "json", "--http", "127.0.0.1:0", dir)
	base := "http://" + r.httpAddr(t)
	r.waitFor(t, "four workers, the files watched", func() bool {
		return len(logLines(r, "main")) == 4 && strings.Contains(r.logs(), `"msg":"started"`)
	})
	v1 := map[string]bool{}
	for _, l := range logLines(r, "main") {
		v1[l.PID] = true
	}
	saveRename(t, worker, upgradeWorker("v2"))
	var v2 []logLine
	r.waitFor(t, "four workers on v2", func() bool {
		v2 = v2[:0]
		for _, l := range logLines(r, "main") {
			if l.Code == "v2" {
				v2 = append(v2, l)
			}
		}
		return len(v2) == 4
	})
	kept := 0
	for _, l := range v2 {
		if v1[l.PID] {
			kept++
		}
	}
	if kept != 3 {
		t.Errorf("%d of the four children kept their PID on v2, want 3 (a, c, d upgraded, b restarted): v1 %v, v2 %+v", kept, v1, v2)
	}
	r.waitFor(t, "the upgrades counted", func() bool {
		_, metrics := httpGet(t, base+"/metrics")
		return strings.Contains(metrics, `runner_upgrades_total{entry="app:worker",result="ok"} 1`) &&
			strings.Contains(metrics, `runner_upgrades_total{entry="app:plain",result="ok"} 2`)
	})
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.wait(t)
}

// TestDemoCounterUpgrades is README's tour: edit demo/counter.lua while
// the demo runs, and the counter's count goes on from where it was, under
// the same PID.
func TestDemoCounterUpgrades(t *testing.T) {
	dir := copyDemo(t)
	tok := tokenFile(t, "0123456789abcdef0123456789abcdef")
	r := start(t, "run", "--log-format", "json", "--http", "127.0.0.1:0", "--http-token-file", tok, filepath.Join(dir, "config.example.yaml"))
	addr := r.httpAddr(t)
	r.waitFor(t, "the demo started, the files watched", func() bool { return strings.Contains(r.logs(), `"msg":"started"`) })
	if code, out, errs := runCLI("ask", "--http-token-file", tok, addr, "app:counter", "incr", "1000"); code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("ask incr: %d %q %s", code, out, errs)
	}
	src := filepath.Join(dir, "demo", "counter.lua")
	b, err := os.ReadFile(src)
	if err != nil || !strings.Contains(string(b), `log.info("counter ready")`) {
		t.Fatalf("demo/counter.lua: %v", err)
	}
	saveRename(t, src, strings.Replace(string(b), `log.info("counter ready")`, `log.info("counter ready", {code = "v2"})`, 1))
	r.waitFor(t, "the counter upgraded", func() bool {
		for _, l := range logLines(r, "upgraded in place") {
			if l.Entry == "app:counter" {
				return true
			}
		}
		return false
	})
	code, out, errs := runCLI("ask", "--http-token-file", tok, addr, "app:counter", "get")
	var n float64
	if code != 0 || json.Unmarshal([]byte(out), &n) != nil || n < 1000 {
		t.Fatalf("after the upgrade: %d %q %s; want the count to go on from 1000 or more", code, out, errs)
	}
	if got := logLines(r, "counter ready"); len(got) != 2 || got[0].PID != got[1].PID || got[1].Code != "v2" {
		t.Errorf("counter ready lines %+v: want v1 then v2 under one PID", got)
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.wait(t)
}

// TestUpgradeToCrashLoopUnderIntensity: the new code's main raises at
// once, every time. The upgrade fails, the supervisor restarts the child
// on the new code, which fails again, until the restart intensity makes it
// escalate and the root supervisor gives the entry up. The node stays:
// another entry goes on answering, /healthz answers, and the reload says
// degraded with the failed upgrade.
func TestUpgradeToCrashLoopUnderIntensity(t *testing.T) {
	dir := t.TempDir()
	worker := filepath.Join(dir, "worker.lua")
	os.WriteFile(worker, []byte(upgradeWorker("v1")), 0o644)
	os.WriteFile(filepath.Join(dir, "other.lua"), []byte(upgradeWorker("other")), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - {name: worker, kind: process.lua, source: file://worker.lua, on_reload: upgrade}
  - {name: other, kind: process.lua, source: file://other.lua, lifecycle: {auto_start: true}}
  - name: sup
    kind: supervisor
    max_restarts: 2
    restart_window: 10s
    children: [{id: a, process: worker}]
    lifecycle: {auto_start: true, restart: {initial_delay: 10ms, max_delay: 20ms, max_attempts: 2}}
`), 0o644)
	tok := tokenFile(t, "0123456789abcdef0123456789abcdef")
	r := start(t, "run", "--log-format", "json", "--http", "127.0.0.1:0", "--http-token-file", tok, dir)
	addr := r.httpAddr(t)
	base := "http://" + addr
	r.waitFor(t, "two processes, the files watched", func() bool {
		return len(logLines(r, "main")) == 2 && strings.Contains(r.logs(), `"msg":"started"`)
	})
	saveRename(t, worker, `return { upgrade = function() return 1 end, main = function() error("v2 is broken") end } -- v2`)
	r.waitFor(t, "the supervisor's entry given up", func() bool {
		code, body := httpGet(t, base+"/v1/entries/app:sup")
		return code == 200 && strings.Contains(body, `"failed"`)
	})
	code, body := httpGet(t, base+"/v1/reload")
	if code != 200 || !strings.Contains(body, `"failed": 1`) && !strings.Contains(body, `"failed":1`) || !strings.Contains(body, "v2 is broken") {
		t.Errorf("reload status %d %s", code, body)
	}
	// A failed entry fails the probe (503); the node answers it.
	if code, body := httpGet(t, base+"/healthz"); code != 503 || !strings.Contains(body, "app:sup") {
		t.Errorf("healthz %d %s", code, body)
	}
	if code, out, errs := runCLI("ask", "--http-token-file", tok, addr, "app:other", "get"); code != 0 || strings.TrimSpace(out) != `"other"` {
		t.Errorf("the other entry after the crash loop: %d %q %s", code, out, errs)
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.wait(t)
}
