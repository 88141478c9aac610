package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/node"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// stuckKind's process ignores its stop request until released, as a
// service wedged in a long call would.
type stuckKind struct{ gate chan struct{} }

func (stuckKind) Name() string                 { return "test.stuck" }
func (stuckKind) Decode(*registry.Decoder) any { return nil }

type stuckInstance struct{ pid process.PID }

func (s stuckInstance) PID() process.PID { return s.pid }

func (k stuckKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		<-k.gate
		return nil, nil
	}, process.SpawnOptions{MonitorBy: opts.MonitorBy})
	return stuckInstance{pid}, err
}

func TestSecondSignalForcesExit(t *testing.T) {
	k := stuckKind{gate: make(chan struct{})}
	kinds := registry.NewRegistry()
	kinds.Register(k)
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("namespace: a\nentries:\n  - {name: s, kind: test.stuck, lifecycle: {auto_start: true}}\n"), 0o644)
	log := slog.New(slog.DiscardHandler)
	n, err := node.Start(context.Background(), node.Options{Paths: []string{p}, Loader: &config.Loader{Kinds: kinds}, Logger: log, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	forced := make(chan struct{})
	done := make(chan struct{})
	go func() {
		shutdownWatching(n, sigs, log, func() { close(forced) })
		close(done)
	}()
	// The first signal started the shutdown (the caller consumed it); the
	// second one, while the stuck entry holds the shutdown up, forces exit.
	sigs <- syscall.SIGTERM
	select {
	case <-forced:
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not force exit")
	}
	close(k.gate)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("shutdown did not finish once the entry let go")
	}
}

// SIGTERM while a reload waits for a slow start (a Lua init that blocks
// until its start timeout of a minute) stops the runner at once: the
// start is abandoned and its process killed. The reload under way shows in
// /v1/reload meanwhile.
func TestSIGTERMDuringSlowReload(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ok.lua"), []byte("return {main = function() while true do process.inbox():receive() end end}"), 0o644)
	os.WriteFile(filepath.Join(dir, "slow.lua"), []byte("return {init = function() time.sleep('1h') end, main = function() end}"), 0o644)
	c := filepath.Join(dir, "c.yaml")
	const base = "namespace: app\nentries:\n  - {name: ok, kind: process.lua, source: file://ok.lua, lifecycle: {auto_start: true}}\n"
	os.WriteFile(c, []byte(base), 0o644)
	r := runInProcess(t, "--no-watch", "--http", "127.0.0.1:0", c)
	os.WriteFile(c, []byte(base+"  - {name: slow, kind: process.lua, source: file://slow.lua, lifecycle: {auto_start: true, start_timeout: 1m}}\n"), 0o644)
	r.sigs <- syscall.SIGHUP
	testutil.Eventually(t, "the reload to wait for app:slow", func() bool {
		_, ok := r.app.node.Whereis("app:slow")
		return ok
	})
	url := "http://" + r.app.n.HTTPAddr().String()
	code, body := httpGet(t, url+"/v1/reload")
	if code != 200 || !strings.Contains(body, `"in_progress"`) {
		t.Fatalf("/v1/reload during the slow reload: %d %s", code, body)
	}
	// The runtime's loop is busy with the start: the probes and views read
	// snapshots and answer anyway.
	for _, path := range []string{"/livez", "/healthz", "/v1/entries", "/v1/entries/app:ok", "/v1/supervisors", "/v1/pg", "/metrics"} {
		if code, body := httpGet(t, url+path); code != 200 {
			t.Fatalf("%s during the slow reload: %d %s", path, code, body)
		}
	}
	if code, body := httpGet(t, url+"/readyz"); code != 503 || !strings.Contains(body, "app:slow") {
		t.Fatalf("/readyz during the slow reload: %d %s", code, body)
	}
	start := time.Now()
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, r.stderr.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("SIGTERM during a slow reload took %v to exit", d)
	}
}
