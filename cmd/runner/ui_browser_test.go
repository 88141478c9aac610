package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	httpkind "github.com/proctor-run/proctor/kinds/http"
	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

// findBrowser returns the Chromium to drive. Without one the test skips
// locally, but fails under CI (CI is set), where .ci/run installs it.
func findBrowser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROCTOR_BROWSER"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found: CI must run the browser test (.ci/run installs Debian's chromium package)")
	}
	t.Skip("no Chromium found (apt-get install chromium); CI runs this test")
	return ""
}

// browser starts a headless Chromium that reaches only this machine, and
// returns a tab's context; everything is closed at the end of the test.
func browser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-proxy-server", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
		cancelAlloc()
	})
	return ctx
}

// waitFor polls a JavaScript predicate in the page until it holds.
func waitFor(t *testing.T, ctx context.Context, what, predicate string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, html)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// childPID is the PID of child id of the supervisor entry sup.
func childPID(t *testing.T, rt *runtime.Runtime, sup registry.ID, id string) process.PID {
	t.Helper()
	inst, ok := rt.Instance(sup)
	if !ok {
		t.Fatalf("%s is not running", sup)
	}
	for _, c := range inst.(*supervisor.Supervisor).WhichChildren() {
		if c.ID == id {
			return c.PID
		}
	}
	t.Fatalf("%s has no child %s", sup, id)
	return process.PID{}
}

// TestLiveViewInABrowser drives /ui in headless Chromium against the
// running demo: the supervision trees render, a killed child's restart
// count changes on screen without a reload, and a rejected edit of the
// configuration shows its error. With PROCTOR_UI_SCREENSHOT=FILE it also
// saves a screenshot of the page (docs/ui.png is made so).
func TestLiveViewInABrowser(t *testing.T) {
	path := findBrowser(t)
	dir := copyDemo(t)
	cfg := filepath.Join(dir, "config.example.yaml")
	tok := tokenFile(t, "0123456789abcdef0123456789abcdef")
	r := runInProcess(t, "--log-format", "json", "--node", "demo", "--http", "127.0.0.1:0", "--http-token-file", tok, cfg)
	base := "http://" + r.app.n.HTTPAddr().String()
	ctx := browser(t, path)

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the stream is live", `document.getElementById("conn").dataset.state === "live"`)

	// The trees, nested: app:core > jobs (a supervisor) > w2.
	const cache = `document.querySelector('li[data-path="app:core/cache"] > .node-line > .restarts')`
	waitFor(t, ctx, "the tree renders", `document.querySelector('li[data-path="app:core/jobs/w2"]') !== null && `+cache+` !== null`)
	if got := eval[string](t, ctx, cache+`.textContent`); got != "restarts 0" {
		t.Fatalf("cache before the kill: %q", got)
	}
	eval[bool](t, ctx, `window.proctorNoReload = true`)

	// The HTTP servers panel: the demo's server with the address it is
	// bound to, its limits, and a row a route with what the route says.
	inst, ok := r.app.rt.Instance("app:web")
	if !ok {
		t.Fatal("app:web is not running")
	}
	web := inst.(*httpkind.Server)
	const panel = `document.querySelector('#http div[data-http="app:web"]')`
	waitFor(t, ctx, "the HTTP panel shows app:web and its routes", panel+` !== null && `+panel+`.querySelectorAll('tbody tr').length === 2`)
	if got := eval[string](t, ctx, panel+`.querySelector('h3').textContent`); got != "app:web "+web.Addr() {
		t.Errorf("HTTP panel heading %q, want %q", got, "app:web "+web.Addr())
	}
	if got := eval[string](t, ctx, panel+`.querySelector('p.meta').textContent`); !strings.HasSuffix(got, " of 1024 connections · max body 65536 bytes") {
		t.Errorf("HTTP panel limits %q", got)
	}
	rows := eval[[][]string](t, ctx, `[...`+panel+`.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.textContent))`)
	want := [][]string{
		{"app:api_count", "GET, POST", "/api/count", "app:api", "", "2s", "0 of 1024"},
		{"app:api_hello", "GET", "/api/hello/{name}", "app:api", "", "2s", "0 of 1024"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("HTTP panel routes:\n got %q\nwant %q", rows, want)
	}

	// Kill a child: its restart count changes on screen, with its last
	// exit, and the page was never reloaded.
	if err := r.app.node.Kill(childPID(t, r.app.rt, "app:core", "cache")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the restart count changes", cache+`.dataset.count === "1" && `+cache+`.textContent === "restarts 1"`)
	if got := eval[string](t, ctx, `document.querySelector('li[data-path="app:core/cache"] > .node-line > .lastexit').textContent`); !strings.Contains(got, "killed") {
		t.Fatalf("last exit %q", got)
	}
	if !eval[bool](t, ctx, `window.proctorNoReload === true`) {
		t.Fatal("the page was reloaded")
	}

	// A rejected edit: the reload history shows its error.
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(orig), "    max_restarts: 5\n", "    max_restartz: 5\n", 1)
	if bad == string(orig) {
		t.Fatal("the demo changed: no max_restarts: 5 to break")
	}
	if err := os.WriteFile(cfg, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the rejected reload shows its error",
		`[...document.querySelectorAll('.reload[data-result="rejected"] pre.errors')].some(e => e.textContent.includes('max_restartz: unknown field (did you mean "max_restarts"?)'))`)
	if !eval[bool](t, ctx, `window.proctorNoReload === true`) {
		t.Fatal("the page was reloaded")
	}

	// The fix, with an edit of the counter's code (on_reload: upgrade):
	// the applied reload says it upgraded the counter in place.
	counter := filepath.Join(dir, "demo", "counter.lua")
	code, err := os.ReadFile(counter)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(counter, append(code, "-- edited while it runs\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the applied reload shows the counter's upgrade",
		`[...document.querySelectorAll('.reload[data-result="applied"]')].some(e => /upgraded [1-9]/.test(e.textContent))`)

	if shot := os.Getenv("PROCTOR_UI_SCREENSHOT"); shot != "" {
		screenshot(t, ctx, r, base, tok, cfg, orig, shot)
	}
	if c := r.stop(t); c != 0 {
		t.Fatalf("exit %d", c)
	}
}

// screenshot fixes the configuration (an applied reload follows the
// rejected one), makes a few dead letters, waits for the demo's client to
// have used every kind, and saves the whole page as a PNG.
func screenshot(t *testing.T, ctx context.Context, r *inproc, base, tok, cfg string, orig []byte, file string) {
	t.Helper()
	if err := os.WriteFile(cfg, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the fix applies", `document.querySelector('.reload[data-result="applied"]') !== null`)
	addr := strings.TrimPrefix(base, "http://")
	for _, args := range [][]string{
		{"send", "--http-token-file", tok, addr, "app:search", "find", `"x"`},
		{"send", "--http-token-file", tok, addr, "app:nobody", "hello"},
		{"send", "--http-token-file", tok, addr, "app:replicas", "lookup", `{"key":"user-1"}`},
	} {
		runCLI(args...) // the dead letters are the point: their errors are expected
	}
	// The demo's client runs a round every 3 seconds.
	waitFor(t, ctx, "the dead letters show", `document.querySelectorAll('#deadletters tr[data-reason]').length >= 2`)
	time.Sleep(4 * time.Second)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := json.Marshal(map[string]any{"bytes": len(png), "file": file})
	fmt.Fprintf(os.Stderr, "screenshot: %s\n", st)
}

// The live view on a node that never reloaded (--no-watch) and has a
// failing check: every panel draws (the reload history's null stopped the
// page before the dead letters, the deepest mailboxes and the failing
// checks), the header sums up /healthz and /readyz, and the cluster panel
// lists the node's cluster. /ui?once draws one state without a stream.
func TestLiveViewNeverReloadedWithFailingChecks(t *testing.T) {
	path := findBrowser(t)
	dir := t.TempDir()
	files := map[string]string{
		"app.yaml": `namespace: app
entries:
  - name: steady
    kind: process.lua
    source: file://steady.lua
    lifecycle: {auto_start: true}
  - name: flaky
    kind: process.lua
    source: file://flaky.lua
    lifecycle:
      auto_start: true
      restart: {initial_delay: 10ms, max_delay: 20ms, max_attempts: 2}
`,
		"steady.lua": `return { main = function() process.inbox():receive() end }`,
		"flaky.lua":  `return { main = function() error("boom") end }`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret, _ := clusterSecret(t)
	r := runInProcess(t, "--log-format", "json", "--no-watch", "--node", "ui1", "--http", "127.0.0.1:0",
		"--cluster-bind", "127.0.0.1:0", "--cluster-secret-file", secret, filepath.Join(dir, "app.yaml"))
	base := "http://" + r.app.n.HTTPAddr().String()
	ctx := browser(t, path)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the stream is live", `document.getElementById("conn").dataset.state === "live"`)
	waitFor(t, ctx, "the failing checks show", `!document.getElementById("failing-section").hidden && document.getElementById("failing").textContent.includes("app:flaky")`)
	waitFor(t, ctx, "the header says failing and not ready",
		`document.querySelector('#health [data-check="healthz"]').classList.contains("failing") && document.querySelector('#health [data-check="readyz"]').classList.contains("notready")`)
	for what, predicate := range map[string]string{
		"the reload history says none":  `document.getElementById("reloads").textContent.includes("none: no reload yet")`,
		"the dead letters draw":         `document.getElementById("deadletters").textContent.includes("none so far")`,
		"the deepest mailboxes draw":    `document.getElementById("deepest").textContent !== ""`,
		"the cluster panel draws":       `document.getElementById("cluster").textContent.includes("this node: ui1") && document.getElementById("cluster").textContent.includes("no other node has joined")`,
		"the legend explains the chips": `document.querySelector(".legend .badge.local") !== null && document.querySelector(".legend .badge.remote") !== null`,
		"an empty panel says none":      `document.getElementById("pools").textContent.startsWith("none")`,
	} {
		waitFor(t, ctx, what, predicate)
	}

	// ?once: one state, no stream.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui?once")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "?once draws one state", `document.getElementById("conn").dataset.state === "once" && document.querySelector('tr[data-entry="app:steady"]') !== null`)
	if c := r.stop(t); c != 0 {
		t.Fatalf("exit %d", c)
	}
}
