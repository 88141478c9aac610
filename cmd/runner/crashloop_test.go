package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// instances that end the moment their start returns, again and
// again, under the real runner: a Lua entry whose main raises at once, and
// a supervisor whose only child raises at once (it escalates right after
// its start). The root must see each exit with its own reason (not "no
// such process", nor the late-monitor error), count the restarts, and give
// up after exactly max_attempts with the real error.
func TestCrashAtOnceHonoursMaxAttempts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "boom.lua"), []byte(`return { main = function() error("raised at once on purpose") end }
`), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - name: boom
    kind: process.lua
    source: file://boom.lua
    lifecycle: {auto_start: true, restart: {initial_delay: 10ms, max_delay: 20ms, max_attempts: 3}}
  - name: child
    kind: process.lua
    source: file://boom.lua
  - name: sup
    kind: supervisor
    lifecycle: {auto_start: true, restart: {initial_delay: 10ms, max_delay: 20ms, max_attempts: 2}}
    max_restarts: 1
    restart_window: 5s
    children:
      - {id: c, process: app:child}
`), 0o644)
	r := start(t, "run", "--log-format", "json", "--no-watch", "--http", "127.0.0.1:0", filepath.Join(dir, "c.yaml"))
	base := "http://" + r.httpAddr(t)
	type detail struct {
		Status   string `json:"status"`
		Error    string `json:"error"`
		Restarts int    `json:"restarts"`
	}
	get := func(id string) detail {
		var d detail
		_, body := httpGet(t, base+"/v1/entries/"+id)
		json.Unmarshal([]byte(body), &d)
		return d
	}
	for _, tc := range []struct {
		id       string
		attempts int
		want     string
	}{
		{"app:boom", 3, "gave up after 3 restart attempts"},
		{"app:sup", 2, "gave up after 2 restart attempts"},
	} {
		r.waitFor(t, tc.id+" failed", func() bool { return get(tc.id).Status == "failed" })
		d := get(tc.id)
		if !strings.Contains(d.Error, tc.want) || !strings.Contains(d.Error, "raised at once on purpose") {
			t.Errorf("%s: error %q, want %q with the script's own error", tc.id, d.Error, tc.want)
		}
		if strings.Contains(d.Error, "no such process") || strings.Contains(d.Error, "before the root supervisor could monitor it") {
			t.Errorf("%s: exit seen without its reason: %q", tc.id, d.Error)
		}
		if d.Restarts != tc.attempts {
			t.Errorf("%s: %d restarts, want %d", tc.id, d.Restarts, tc.attempts)
		}
	}
	if l := r.logs(); strings.Contains(l, "did not have the root monitor its instance") {
		t.Errorf("a shipped kind was monitored late:\n%s", l)
	}
}
