package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/internal/readfile"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// Editors save in three ways; each must be seen.
func saveRename(t testing.TB, p, body string) {
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

func saveBackup(t testing.TB, p, body string) {
	if err := os.Rename(p, p+"~"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(p + "~")
}

func saveChunks(t testing.TB, p, body string) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	n := len(body) / 3
	for i, chunk := range []string{body[:n], body[n : 2*n], body[2*n:]} {
		if i > 0 {
			time.Sleep(15 * time.Millisecond)
		}
		if _, err := f.WriteString(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
}

var waitUntil = testutil.Eventually

func (r *reloadEnv) watch(debounce time.Duration) *Watcher {
	r.t.Helper()
	w, err := Watch(WatchOptions{Runtime: r.rt, Loader: r.loader, Paths: []string{r.dir}, Config: r.rt.Config(),
		Logger: r.rt.log, Debounce: debounce})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { w.Close() })
	return w
}

const watchBase = `namespace: a
entries:
  - {name: x, kind: test.svc, source: "file://lua/w.lua", lifecycle: {auto_start: true}}
`

func TestWatchEditors(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1", "notes.txt": "x"})
	w := r.watch(0)
	c := filepath.Join(r.dir, "c.yaml")
	x := r.pid("a:x")
	running := func(id registry.ID) func() bool { return func() bool { return !r.pid(id).IsZero() } }

	saveRename(t, c, watchBase+"  - {name: y, kind: test.svc, lifecycle: {auto_start: true}}\n")
	waitUntil(t, "y added by a rename save", running("a:y"))
	y := r.pid("a:y")

	saveBackup(t, c, watchBase+"  - {name: y, kind: test.svc, size: 2, lifecycle: {auto_start: true}}\n")
	waitUntil(t, "y restarted by a backup-and-write save", func() bool { p := r.pid("a:y"); return !p.IsZero() && p != y })

	saveChunks(t, c, watchBase)
	waitUntil(t, "y removed by an in-place save", func() bool { _, ok := r.rt.Info("a:y"); return !ok })
	if r.pid("a:x") != x {
		t.Fatal("a:x was touched by changes to other entries")
	}

	// Counters and log lines come a moment after a reload is in force (or
	// refused): wait for what is awaited, and compare states, not counts.
	rejected := r.rejected()
	saveChunks(t, c, watchBase+"  - {name: y, kind: test.svc, sise: 2}\n")
	waitUntil(t, "broken save rejected", func() bool { return r.rejected() > rejected })
	waitUntil(t, "the rejection logged with its position", func() bool {
		return strings.Contains(r.logs.String(), `c.yaml:4:31: a:y: sise: unknown field (did you mean \"size\"?)`)
	})
	if _, ok := r.rt.Info("a:y"); ok || r.pid("a:x") != x {
		t.Fatalf("a rejected reload changed the running state:\n%s", r.logs.String())
	}
	saveRename(t, c, watchBase+"  - {name: y, kind: test.svc, size: 3, lifecycle: {auto_start: true}}\n")
	waitUntil(t, "fixed save applied", running("a:y"))

	os.WriteFile(filepath.Join(r.dir, "lua", "w.lua"), []byte("return 'broken"), 0o644)
	saveRename(t, filepath.Join(r.dir, "lua", "w.lua"), "return 2")
	waitUntil(t, "x restarted on a source change", func() bool { p := r.pid("a:x"); return !p.IsZero() && p != x })

	d := filepath.Join(r.dir, "more", "d.yaml")
	os.MkdirAll(filepath.Dir(d), 0o755)
	os.WriteFile(d, []byte("namespace: b\nentries:\n  - {name: z, kind: test.svc, lifecycle: {auto_start: true}}\n"), 0o644)
	waitUntil(t, "a new file in a new directory picked up", running("b:z"))
	os.Remove(d)
	waitUntil(t, "a deleted file's entries removed", func() bool { _, ok := r.rt.Info("b:z"); return !ok })

	before := r.applied()
	w.Trigger()
	waitUntil(t, "a forced reload", func() bool { return r.applied() == before+1 })
	// The watcher logs the summary after the reload has counted itself.
	waitUntil(t, "the summary line", func() bool {
		return strings.Contains(r.logs.String(), "reload applied: added=0 updated=0 removed=0 unchanged=2")
	})
}

// manualTimer is a debounce timer that fires when the test says so.
type manualTimer struct {
	c      chan time.Time
	resets atomic.Int32
	last   atomic.Int64 // the duration of the last Reset
}

func newManualTimer() *manualTimer { return &manualTimer{c: make(chan time.Time)} }

func (m *manualTimer) Chan() <-chan time.Time { return m.c }
func (m *manualTimer) Stop() bool             { return true }
func (m *manualTimer) Reset(d time.Duration) bool {
	m.last.Store(int64(d))
	m.resets.Add(1)
	return true
}

// fire ends the quiet period; it returns once the watcher has seen it.
func (m *manualTimer) fire() { m.c <- time.Now() }

// TestWatchBurst: a burst of saves is one reload, and the last save wins.
// Every save restarts the quiet period (the debounce's timer is Reset, for
// the default 100 ms) and nothing reloads until it has passed; the
// test's own timer says when it has, so no pause of a busy machine
// between two saves ends the burst.
func TestWatchBurst(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	quiet := newManualTimer()
	w, err := Watch(WatchOptions{Runtime: r.rt, Loader: r.loader, Paths: []string{r.dir}, Config: r.rt.Config(),
		Logger: r.rt.log, quiet: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	c := filepath.Join(r.dir, "c.yaml")
	before := r.applied()
	const saves = 50
	for i := 1; i <= saves; i++ {
		body := fmt.Sprintf("%s  - {name: y, kind: test.svc, size: %d, lifecycle: {auto_start: true}}\n", watchBase, i)
		if i%2 == 0 {
			saveRename(t, c, body)
		} else {
			os.WriteFile(c, []byte(body), 0o644)
		}
	}
	// Each save is at least one event for c.yaml (a rename's create, a
	// write), and two saves in a row never give the same one, so the
	// kernel merges none of them: at least one Reset per save.
	waitUntil(t, "every save seen", func() bool { return quiet.resets.Load() >= saves })
	if d := time.Duration(quiet.last.Load()); d != 100*time.Millisecond {
		t.Fatalf("the quiet period is %s, want the default 100ms", d)
	}
	if n := r.applied() - before; n != 0 {
		t.Fatalf("%v reloads while the files kept changing", n)
	}
	quiet.fire()
	waitUntil(t, "the last save applied", func() bool {
		e, ok := r.rt.Entry("a:y")
		return ok && e.Spec.(*kindtest.SvcSpec).Size == saves && !r.pid("a:y").IsZero() && r.applied() > before
	})
	if n := r.applied() - before; n != 1 {
		t.Fatalf("%v reloads for a burst of %d saves", n, saves)
	}
}

// BenchmarkSaveToApply measures the time from a save (rename style) to the
// change being in force.
func BenchmarkSaveToApply(b *testing.B) {
	kinds, _ := kindtest.Kinds()
	dir := b.TempDir()
	c := filepath.Join(dir, "c.yaml")
	body := func(i int) string {
		return fmt.Sprintf("namespace: a\nentries:\n  - {name: y, kind: test.svc, size: %d, lifecycle: {auto_start: true}}\n", i)
	}
	os.WriteFile(c, []byte(body(0)), 0o644)
	loader := &config.Loader{Kinds: kinds}
	cfg, err := loader.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	rt := NewRuntime(RuntimeOptions{Node: process.NewNode(process.Options{Name: "b"}), Kinds: kinds, Logger: slog.New(slog.DiscardHandler)})
	defer rt.Stop(context.Background())
	if err := rt.Start(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	w, err := Watch(WatchOptions{Runtime: rt, Loader: loader, Paths: []string{dir}, Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var total time.Duration
	i := 0
	for b.Loop() {
		i++
		start := time.Now()
		saveRename(b, c, body(i))
		for {
			if e, ok := rt.Entry("a:y"); ok && e.Spec.(*kindtest.SvcSpec).Size == i {
				if _, ok := rt.Instance("a:y"); ok {
					break
				}
			}
			time.Sleep(time.Millisecond)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/save-to-apply")
}

// TestWatchManual: a Manual watcher ignores file changes and reloads on
// Trigger alone (SIGHUP under --no-watch, or where the file system gives no
// change notifications).
func TestWatchManual(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	w, err := Watch(WatchOptions{Runtime: r.rt, Loader: r.loader, Paths: []string{r.dir}, Config: r.rt.Config(),
		Logger: r.rt.log, Debounce: 10 * time.Millisecond, Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	saveRename(t, filepath.Join(r.dir, "c.yaml"), watchBase+"  - {name: y, kind: test.svc, lifecycle: {auto_start: true}}\n")
	time.Sleep(200 * time.Millisecond) // twenty debounce periods: a reload would show now
	if r.applied() != 0 {
		t.Fatal("a manual watcher reloaded on a file change")
	}
	w.Trigger()
	waitUntil(t, "the triggered reload", func() bool { _, ok := r.rt.Info("a:y"); return ok && r.applied() == 1 })
}

// TestWatchRetriesTransientFailure: a reload that fails because the node
// is out of file descriptors is not a rejected configuration: it is logged
// and tried again, with backoff, until it applies.
func TestWatchRetriesTransientFailure(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	var failing atomic.Int32
	failing.Store(3) // the next three opens fail
	readfile.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		if failing.Add(-1) >= 0 {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
		}
		return os.OpenFile(name, flag, perm)
	}
	t.Cleanup(func() { readfile.OpenFile = os.OpenFile })
	w, err := Watch(WatchOptions{Runtime: r.rt, Loader: r.loader, Paths: []string{r.dir}, Config: r.rt.Config(),
		Logger: r.rt.log, Debounce: 10 * time.Millisecond, RetryDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	saveRename(t, filepath.Join(r.dir, "c.yaml"), watchBase+"  - {name: y, kind: test.svc, lifecycle: {auto_start: true}}\n")
	waitUntil(t, "the change applied after the descriptors came back", func() bool { return !r.pid("a:y").IsZero() })
	logs := r.logs.String()
	if !strings.Contains(logs, "reload failed for a reason that may pass") || !strings.Contains(logs, "too many open files") ||
		!strings.Contains(logs, "reload will be retried") {
		t.Fatalf("the transient failure was not logged:\n%s", logs)
	}
	if r.rejected() != 0 {
		t.Fatalf("a transient failure counted as a rejected configuration (%v)", r.rejected())
	}
	if failing.Load() >= 0 {
		t.Fatal("the failing opens were not all tried")
	}
}

// TestWatchNamedPipe: a named pipe appearing as *.yaml in a watched
// directory neither wedges the watcher nor blocks its Close: it is skipped
// with a warning, and later saves still apply.
func TestWatchNamedPipe(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	r.loader.Logger = r.rt.log
	w, err := Watch(WatchOptions{Runtime: r.rt, Loader: r.loader, Paths: []string{r.dir}, Config: r.rt.Config(),
		Logger: r.rt.log, Debounce: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(r.dir, "pipe.yaml"))
	waitUntil(t, "the pipe skipped", func() bool {
		return strings.Contains(r.logs.String(), "configuration file skipped: not a regular file")
	})
	saveRename(t, filepath.Join(r.dir, "c.yaml"), watchBase+"  - {name: y, kind: test.svc, lifecycle: {auto_start: true}}\n")
	waitUntil(t, "a later save applied", func() bool { return !r.pid("a:y").IsZero() })
	closed := make(chan struct{})
	go func() { w.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close blocks")
	}
}

// A saved file reloads with the environment the runner had; only SIGHUP
// (Trigger) reads it again, and then an unchanged file whose variables
// changed is applied anew.
func TestWatchRereadsEnvironmentOnlyOnSIGHUP(t *testing.T) {
	var env atomic.Pointer[[]string]
	env.Store(&[]string{"SIZE=1"})
	body := "namespace: a\nentries:\n  - name: x\n    kind: test.svc\n    size: ${env:SIZE}\n    lifecycle: {auto_start: true}\n"
	kinds, _ := kindtest.Kinds()
	r := &reloadEnv{t: t, dir: t.TempDir(), logs: &syncBuffer{}}
	r.loader = &config.Loader{Kinds: kinds, Environ: func() []string { return *env.Load() }}
	r.write("c.yaml", body)
	r.rt = NewRuntime(RuntimeOptions{Node: process.NewNode(process.Options{Name: "t"}), Kinds: kinds, StopTimeout: time.Second,
		Logger: slog.New(slog.NewJSONHandler(r.logs, nil))})
	t.Cleanup(func() { r.rt.Stop(context.Background()) })
	cfg, err := r.loader.Load(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	w := r.watch(10 * time.Millisecond)
	size := func() int {
		e, _ := r.rt.Entry("a:x")
		return e.Spec.(*kindtest.SvcSpec).Size
	}
	env.Store(&[]string{"SIZE=2"})
	saveRename(t, filepath.Join(r.dir, "c.yaml"), body+"# saved\n")
	waitUntil(t, "the save applied", func() bool { return r.applied() >= 1 })
	if size() != 1 {
		t.Fatal("a saved file read the environment again")
	}
	w.Trigger()
	waitUntil(t, "SIGHUP applied the new environment", func() bool { return size() == 2 })
}
