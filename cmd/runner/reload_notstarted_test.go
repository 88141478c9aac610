package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReloadSaysWhenNewCodeDidNotStart: a routee source edited so that its
// init raises cannot replace the running routees (the pool keeps them on the
// old code) nor the supervisor's child. The reload applies, and says so
// honestly: the routees count as outdated (/v1/entries,
// runner_outdated_processes), the pool counts the failed renewals, and
// /v1/reload and the reload health check say for how many processes the
// new code did not start. Fixing the source renews them and clears it all.
func TestReloadSaysWhenNewCodeDidNotStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	worker := func(init string) string {
		return `return { init = function() ` + init + ` end, main = function()
  local inbox = process.inbox()
  while true do local m = inbox:receive(); m:reply("ok") end
end }
`
	}
	os.WriteFile(filepath.Join(dir, "worker.lua"), []byte(worker("")), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - {name: worker, kind: process.lua, source: file://worker.lua}
  - {name: pool, kind: router.pool, routee: worker, size: 2, lifecycle: {auto_start: true}}
  - name: sup
    kind: supervisor
    lifecycle: {auto_start: true}
    max_restarts: 1000
    restart_window: 1s
    children: [{id: w, process: worker}]
`), 0o644)
	r := start(t, "run", "--log-format", "json", "--http", "127.0.0.1:0", dir)
	base := "http://" + r.httpAddr(t)
	type attempt struct {
		Result     string   `json:"result"`
		Outdated   int      `json:"outdated"`
		NotStarted int      `json:"not_started"`
		Warnings   []string `json:"warnings"`
	}
	lastReload := func() (attempt, bool) {
		var a attempt
		code, body := httpGet(t, base+"/v1/reload")
		// While a reload is under way /v1/reload holds only in_progress:
		// an attempt is over when it has its result.
		return a, code == 200 && json.Unmarshal([]byte(body), &a) == nil && a.Result != ""
	}
	outdated := func() int {
		var es []struct {
			ID       string `json:"id"`
			Outdated int    `json:"outdated"`
		}
		_, body := httpGet(t, base+"/v1/entries")
		json.Unmarshal([]byte(body), &es)
		for _, e := range es {
			if e.ID == "app:worker" {
				return e.Outdated
			}
		}
		return -1
	}
	reloadCheck := func() string {
		var h struct {
			Status string            `json:"status"`
			Checks map[string]string `json:"checks"`
		}
		_, body := httpGet(t, base+"/healthz")
		json.Unmarshal([]byte(body), &h)
		return h.Checks["reload"]
	}
	// "started" comes once the runner watches its files: a save from then
	// on reloads on its own event (one before it, while the entries start,
	// waits for the watcher's rescan a debounce period later).
	r.waitFor(t, "entries running, the files watched", func() bool {
		code, body := httpGet(t, base+"/v1/entries")
		return code == 200 && strings.Count(body, `"running"`) == 2 && strings.Contains(r.logs(), `"msg":"started"`)
	})

	saveRename(t, filepath.Join(dir, "worker.lua"), worker(`error("bad init")`))
	var a attempt
	r.waitFor(t, "the reload to apply", func() bool {
		var ok bool
		a, ok = lastReload()
		return ok
	})
	// Two routees kept on the old code, and the child that did not start.
	if a.Result != "applied" || a.NotStarted != 3 || a.Outdated != 2 || len(a.Warnings) != 1 ||
		!strings.Contains(a.Warnings[0], "app:worker: the new code did not start for 3 processes") ||
		!strings.Contains(a.Warnings[0], "bad init") {
		t.Fatalf("last reload %+v", a)
	}
	if n := outdated(); n != 2 {
		t.Errorf("app:worker outdated = %d, want 2", n)
	}
	if c := reloadCheck(); !strings.HasPrefix(c, "degraded: ") || !strings.Contains(c, "did not start for 3 processes") {
		t.Errorf("reload check %q", c)
	}
	_, metrics := httpGet(t, base+"/metrics")
	for _, want := range []string{
		`router_pool_routee_renewal_failures_total{pool="app:pool"} 2`,
		`router_pool_routee_renewals_total{pool="app:pool"} 0`,
		`runner_outdated_processes{entry="app:worker"} 2`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// The watcher logs the summary once the reload returned, and the
	// log reaches the test through a pipe: wait for it.
	r.waitFor(t, "an honest summary line", func() bool {
		return strings.Contains(r.logs(), "reload applied: added=0 updated=3 removed=0 unchanged=0 not_started=3")
	})

	saveRename(t, filepath.Join(dir, "worker.lua"), worker(`log.info("fixed")`))
	r.waitFor(t, "the fix to renew everything", func() bool {
		a, ok := lastReload()
		return ok && a.NotStarted == 0 && a.Outdated == 0 && outdated() == 0 && reloadCheck() == "ok"
	})
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.wait(t)
}

// TestReloadSaysWhenNewCodeCrashes: new code that starts (no init) and then
// raises at once crash-loops: an entry under the root supervisor, or a
// pool's routees restarted in place (the pool had no routees left). The
// reload said applied, healthy; now it is degraded: /v1/reload counts the
// definition as crashed, with its error, and the reload check says so.
func TestReloadSaysWhenNewCodeCrashes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config, failed string
	}{
		{"an entry", `namespace: app
entries:
  - name: svc
    kind: process.lua
    source: file://code.lua
    lifecycle: {auto_start: true, restart: {initial_delay: 10ms, max_delay: 50ms}}
`, "app:svc failed"},
		{"a pool's routees", `namespace: app
entries:
  - {name: worker, kind: process.lua, source: file://code.lua}
  - {name: pool, kind: router.pool, routee: worker, size: 2, strategy: scatter_gather_first_completed, lifecycle: {auto_start: true}}
`, "app:worker failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			code := func(first string) string {
				return `return { main = function() ` + first + `
  local inbox = process.inbox()
  while true do local m = inbox:receive(); m:reply("ok") end
end }
`
			}
			os.WriteFile(filepath.Join(dir, "code.lua"), []byte(code("")), 0o644)
			os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(tc.config), 0o644)
			r := start(t, "run", "--log-format", "json", "--http", "127.0.0.1:0", dir)
			base := "http://" + r.httpAddr(t)
			// "started" comes once the runner watches its files.
			r.waitFor(t, "the runner started", func() bool { return strings.Contains(r.logs(), `"msg":"started"`) })
			saveRename(t, filepath.Join(dir, "code.lua"), code(`error("broken on purpose")`))
			var a struct {
				Result   string   `json:"result"`
				Crashed  int      `json:"crashed"`
				Warnings []string `json:"warnings"`
			}
			r.waitFor(t, "the reload to count the crash", func() bool {
				code, body := httpGet(t, base+"/v1/reload")
				return code == 200 && json.Unmarshal([]byte(body), &a) == nil && a.Crashed == 1
			})
			if a.Result != "applied" || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], tc.failed) || !strings.Contains(a.Warnings[0], "broken on purpose") {
				t.Fatalf("last reload %+v", a)
			}
			var h struct {
				Checks map[string]string `json:"checks"`
			}
			// Another reload may be under way when /healthz is read (the
			// check then says so for its few milliseconds): the degraded
			// state is what shows once none is.
			var check string
			r.waitFor(t, "the reload check to say degraded", func() bool {
				_, body := httpGet(t, base+"/healthz")
				h.Checks = nil
				json.Unmarshal([]byte(body), &h)
				check = h.Checks["reload"]
				return !strings.HasPrefix(check, "a reload is under way")
			})
			if !strings.HasPrefix(check, "degraded: ") || !strings.Contains(check, tc.failed) {
				t.Fatalf("reload check %q; logs:\n%s", check, r.logs())
			}
			r.cmd.Process.Signal(syscall.SIGTERM)
			r.wait(t)
		})
	}
}
