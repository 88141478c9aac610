package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// Sequences of edits the watcher must follow: a rejected configuration
// and the edit that fixes it (a script written after the YAML naming it,
// in a directory not made yet), its quiet look again, links swapped under
// a file (a Kubernetes ConfigMap), and what the node says about its last
// reload meanwhile.

// watchSettled watches paths (r.dir when none) and waits for the look
// again the watcher makes once it watches, which finds nothing changed.
func (r *reloadEnv) watchSettled(paths ...string) (*manualTimer, *recordLog) {
	r.t.Helper()
	_, quiet, logs := r.watchWith(WatchOptions{Paths: paths})
	waitUntil(r.t, "the rescan armed", func() bool { return quiet.resets.Load() >= 1 })
	quiet.fire()
	waitUntil(r.t, "the start-up rescan done", func() bool { return len(logs.find(slog.LevelDebug, "reload details")) == 1 })
	return quiet, logs
}

// lastSuccess is runner_reload_last_success.
func (r *reloadEnv) lastSuccess() float64 {
	var m dto.Metric
	if err := r.rt.history.success.Write(&m); err != nil {
		panic(err)
	}
	return m.GetGauge().GetValue()
}

// fireUntil ends quiet periods until cond holds (an end with nothing
// pending does nothing), failing after the usual deadline.
func fireUntil(t *testing.T, quiet *manualTimer, logs *recordLog, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s:\n%s", what, logs)
		}
		select {
		case quiet.c <- time.Now():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A change names a Lua source that does not exist yet (the YAML saved
// before the script, as one writes them): the reload is rejected
// ("source lua/y.lua: no such file or directory"). Writing the source must then be seen and reloaded:
// the rejection said what to fix, and the fix is a file the watcher's
// own directories hold. The watcher's file set is the running
// configuration's, which does not name the new source, and a .lua file is
// not a configuration name, so its creation is dropped as irrelevant and
// the node stays on the rejection until some other save.
func TestWatchSeesMissingSourceWrittenAfterRejection(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	quiet, logs := r.watchSettled()

	resets := quiet.resets.Load()
	saveRename(t, filepath.Join(r.dir, "c.yaml"), watchBase+"  - {name: y, kind: test.svc, source: \"file://lua/y.lua\", lifecycle: {auto_start: true}}\n")
	waitUntil(t, "the save seen", func() bool { return quiet.resets.Load() > resets })
	fireUntil(t, quiet, logs, "the rejection", func() bool { return lastResult(r) == ReloadRejected })
	if !strings.Contains(strings.Join(lastErrors(r), "\n"), "lua/y.lua: no such file") {
		t.Fatalf("rejected for another reason: %q", lastErrors(r))
	}

	resets = quiet.resets.Load()
	saveRename(t, filepath.Join(r.dir, "lua", "y.lua"), "return 1")
	deadline := time.Now().Add(5 * time.Second)
	for quiet.resets.Load() == resets {
		if time.Now().After(deadline) {
			t.Fatalf("the missing source was written, but the watcher never reloaded: a:y stays unstarted and the last reload stays %q\n%s",
				lastResult(r), logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	fireUntil(t, quiet, logs, "a:y running", func() bool { return !r.pid("a:y").IsZero() })
}

// The same, with the source in a directory of its own that nothing
// watched yet, next to a configuration file named on the command line
// (`runner run conf/app.yaml`): the rejection's track watches the running
// configuration's directories only.
func TestWatchSeesSourceInNewDirectoryAfterRejection(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	c := filepath.Join(r.dir, "c.yaml")
	quiet, logs := r.watchSettled(c)

	resets := quiet.resets.Load()
	saveRename(t, c, watchBase+"  - {name: y, kind: test.svc, source: \"file://lib/y.lua\", lifecycle: {auto_start: true}}\n")
	waitUntil(t, "the save seen", func() bool { return quiet.resets.Load() > resets })
	fireUntil(t, quiet, logs, "the rejection", func() bool { return r.rejected() == 1 })

	resets = quiet.resets.Load()
	r.write("lib/y.lua", "return 1")
	deadline := time.Now().Add(5 * time.Second)
	for quiet.resets.Load() == resets {
		if time.Now().After(deadline) {
			t.Fatalf("lib/y.lua, which the rejected configuration names, was written, but the watcher never reloaded (last reload %q)\n%s",
				lastResult(r), logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	fireUntil(t, quiet, logs, "a:y running", func() bool { return !r.pid("a:y").IsZero() })
}

func lastErrors(r *reloadEnv) []string {
	a, _ := r.rt.LastReload()
	return a.Errors
}

func lastResult(r *reloadEnv) string {
	a, ok := r.rt.LastReload()
	if !ok {
		return "none"
	}
	return a.Result
}

// A save adds a broken file in a new subdirectory of the configuration
// directory: rejected. Before the rejection's track watches the new
// directory (the window the look again exists for) the file is deleted
// again. The look again then finds the files valid, as the configuration
// in force has them, and stays quiet: not recorded. The last reload stays
// the rejection of a file that no longer exists —
// runner_reload_last_success 0, /v1/reload and the health check naming
// sub/bad.yaml — with no change pending to correct it. A look again whose
// outcome differs from the last attempt's is news, as a rejection with
// other errors is.
func TestRescanFindingRejectedFilesFixedIsRecorded(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	bad := filepath.Join(r.dir, "sub", "bad.yaml")
	var revert atomic.Bool
	watchStat = func(p string) (fs.FileInfo, error) {
		// track stats each path it was given before it walks and watches
		// what is under it: between the rejected load and the watch.
		if p == r.dir && revert.CompareAndSwap(true, false) {
			os.Remove(bad)
		}
		return os.Stat(p)
	}
	t.Cleanup(func() { watchStat = os.Stat })
	quiet, logs := r.watchSettled()
	x := r.pid("a:x")

	resets := quiet.resets.Load()
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bad, []byte("namespace: b\nentries:\n  - {name: z, kind: test.svc, sise: 2}\n"), 0o644)
	waitUntil(t, "the new directory seen", func() bool { return quiet.resets.Load() > resets })
	revert.Store(true)
	fireUntil(t, quiet, logs, "the rejection", func() bool { return r.rejected() == 1 })
	// The rejection's track watched sub (removing bad.yaml first) and
	// armed the look again: let it run.
	fireUntil(t, quiet, logs, "the look again", func() bool {
		return len(logs.find(slog.LevelDebug, "rescan: ")) > 1 || r.applied() > 0
	})
	if _, err := os.Stat(bad); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the test did not remove %s before the watch: %v", bad, err)
	}
	if r.pid("a:x") != x {
		t.Fatal("a:x touched")
	}
	if a, _ := r.rt.LastReload(); a.Result != ReloadApplied || r.lastSuccess() != 1 {
		t.Errorf("the files are valid and in force, but the last reload is still %q (runner_reload_last_success=%v, errors %q)",
			a.Result, r.lastSuccess(), a.Errors)
	}
}

// A quiet look again is swallowed as "rejected again" when its errors
// are the last rejection's. Only the first reloadErrorsKept errors (and
// the count of the rest) are kept of a rejection, and the comparison is
// made on what was kept: a look again whose errors differ past the 100th
// is swallowed, its new errors never logged.
func TestRejectedAgainComparesEveryError(t *testing.T) {
	entries := func(last string) string {
		var b strings.Builder
		b.WriteString("namespace: a\nentries:\n")
		for i := 0; i < reloadErrorsKept; i++ {
			fmt.Fprintf(&b, "  - {name: e%03d, kind: test.svc, sise: 2}\n", i)
		}
		fmt.Fprintf(&b, "  - {name: zz, kind: test.svc, %s: 2}\n", last)
		return b.String()
	}
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	r.write("c.yaml", entries("sise"))
	_, _, err := r.rt.Reload(context.Background(), r.loader, r.dir)
	if err == nil {
		t.Fatal("a broken configuration applied")
	}
	if n := strings.Count(err.Error(), "unknown field"); n != reloadErrorsKept+1 {
		t.Fatalf("%d errors, want %d", n, reloadErrorsKept+1)
	}
	r.write("c.yaml", entries("colour"))
	_, _, err = r.rt.reload(context.Background(), r.loader, true, r.dir)
	if err == nil || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("the look again did not find the new error: %v", err)
	}
	if errors.Is(err, errRejectedAgain) || r.rejected() != 2 {
		t.Errorf("a look again with a new error (zz: colour) was taken for the last rejection: rejected counted %v, want 2", r.rejected())
	}
}

// Not a bug (kept as cover): a look again that finds the files broken
// with the same errors after a fix and the same breakage again is quiet
// only because the breakage was reported by the change that made it; the
// counts follow the changes: rejected, applied, rejected.
func TestBrokenFixedBrokenAgainEachReported(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	quiet, logs := r.watchSettled()
	c := filepath.Join(r.dir, "c.yaml")
	broken := watchBase + "  - {name: y, kind: test.svc, sise: 2}\n"
	for i, step := range []struct {
		body              string
		applied, rejected float64
	}{{broken, 0, 1}, {watchBase, 1, 1}, {broken, 1, 2}, {watchBase + "  - {name: y, kind: test.svc, sise: 3}\n", 1, 3}, {broken, 1, 4}} {
		resets := quiet.resets.Load()
		saveRename(t, c, step.body)
		waitUntil(t, "the save seen", func() bool { return quiet.resets.Load() > resets })
		fireUntil(t, quiet, logs, fmt.Sprintf("step %d counted", i), func() bool {
			return r.applied() == step.applied && r.rejected() == step.rejected
		})
	}
	if a, _ := r.rt.LastReload(); a.Result != ReloadRejected || len(a.Errors) != 1 {
		t.Errorf("last reload %+v", a)
	}
}

// compileKind is test.svc under the name compiling.svc, whose decode
// compiles its source as process.lua does: a source holding "broken" is a
// validation error ("syntax error"), memoized per version of the file.
type compileKind struct{ *kindtest.SvcKind }

func (compileKind) Name() string { return "compiling.svc" }

func (k compileKind) Decode(d *registry.Decoder) any {
	s := k.SvcKind.Decode(d)
	if src := s.(*kindtest.SvcSpec).Source; src != nil {
		if _, err := src.Memo("compiling.svc", func() (any, error) {
			if strings.Contains(string(src.Bytes), "broken") {
				return nil, errors.New("syntax error near 'broken'")
			}
			return len(src.Bytes), nil
		}); err != nil {
			d.Errorf("source", "%s: %v", src.Path, err)
		}
	}
	return s
}

func newCompileEnv(t *testing.T, files map[string]string) *reloadEnv {
	t.Helper()
	kinds, svc := kindtest.Kinds()
	kinds.Register(compileKind{svc})
	return newReloadEnvOf(t, kinds, files)
}

const compileBase = `namespace: a
entries:
  - {name: x, kind: compiling.svc, source: "file://lua/w.lua", lifecycle: {auto_start: true}}
`

// The YAML moves an entry to a new script, lua/v2.lua, which does not
// compile yet: rejected. Fixing lua/v2.lua (in a directory watched all
// along) must reload; the watcher's file set is the running
// configuration's, which names lua/w.lua only, so the fix is dropped as
// irrelevant and a:x stays on its old script until some other save.
func TestWatchSeesFixOfNewScriptThatDidNotCompile(t *testing.T) {
	r := newCompileEnv(t, map[string]string{"c.yaml": compileBase, "lua/w.lua": "return 1"})
	x := r.pid("a:x")
	if x.IsZero() {
		t.Fatal("a:x not running")
	}
	quiet, logs := r.watchSettled()

	r.write("lua/v2.lua", "return 'broken")
	resets := quiet.resets.Load()
	saveRename(t, filepath.Join(r.dir, "c.yaml"), strings.Replace(compileBase, "lua/w.lua", "lua/v2.lua", 1))
	waitUntil(t, "the save seen", func() bool { return quiet.resets.Load() > resets })
	fireUntil(t, quiet, logs, "the rejection", func() bool { return lastResult(r) == ReloadRejected })
	if !strings.Contains(strings.Join(lastErrors(r), "\n"), "syntax error") {
		t.Fatalf("rejected for another reason: %q", lastErrors(r))
	}

	resets = quiet.resets.Load()
	saveRename(t, filepath.Join(r.dir, "lua", "v2.lua"), "return 2")
	deadline := time.Now().Add(5 * time.Second)
	for quiet.resets.Load() == resets {
		if time.Now().After(deadline) {
			t.Fatalf("lua/v2.lua fixed, but the watcher never reloaded: a:x stays on lua/w.lua, the last reload %q\n%s", lastResult(r), logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	fireUntil(t, quiet, logs, "a:x restarted on lua/v2.lua", func() bool { p := r.pid("a:x"); return !p.IsZero() && p != x })
}

// Not a bug (kept as cover): the script in use saved broken, then saved
// broken again with the very same error, each by a change: each save is
// a rejection of its own, counted and recorded (only the watcher's quiet
// look again is swallowed when it repeats the last errors); a:x is never
// touched; the fix then applies.
func TestScriptBrokenTwiceWithTheSameErrorCountsTwice(t *testing.T) {
	r := newCompileEnv(t, map[string]string{"c.yaml": compileBase, "lua/w.lua": "return 1"})
	x := r.pid("a:x")
	quiet, logs := r.watchSettled()
	w := filepath.Join(r.dir, "lua", "w.lua")
	for i, body := range []string{"return 'broken", "return 'broken -- again"} {
		resets := quiet.resets.Load()
		saveRename(t, w, body)
		waitUntil(t, "the save seen", func() bool { return quiet.resets.Load() > resets })
		want := float64(i + 1)
		fireUntil(t, quiet, logs, fmt.Sprintf("rejection %d", i+1), func() bool {
			return r.rejected() >= want && len(r.rt.ReloadHistory()) >= i+1
		})
	}
	h := r.rt.ReloadHistory()
	if len(h) < 2 || h[len(h)-1].Result != ReloadRejected || h[len(h)-2].Result != ReloadRejected ||
		!slices.Equal(h[len(h)-1].Errors, h[len(h)-2].Errors) {
		t.Fatalf("history %+v", h)
	}
	if r.pid("a:x") != x {
		t.Fatal("a:x touched by a rejected reload")
	}
	saveRename(t, w, "return 2")
	fireUntil(t, quiet, logs, "the fix applied", func() bool { p := r.pid("a:x"); return !p.IsZero() && p != x })
}

// Not a bug (kept as cover): a configuration file named on the command
// line deleted is a rejection (docs/reload.md), nothing stops; made again
// as it was, the reload applies and the last reload reads applied.
func TestNamedFileDeletedThenRestored(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	c := filepath.Join(r.dir, "c.yaml")
	x := r.pid("a:x")
	quiet, logs := r.watchSettled(c)
	resets := quiet.resets.Load()
	os.Remove(c)
	waitUntil(t, "the delete seen", func() bool { return quiet.resets.Load() > resets })
	fireUntil(t, quiet, logs, "the rejection", func() bool { return lastResult(r) == ReloadRejected })
	if r.pid("a:x") != x {
		t.Fatal("a:x touched")
	}
	resets = quiet.resets.Load()
	r.write("c.yaml", watchBase)
	waitUntil(t, "the restore seen", func() bool { return quiet.resets.Load() > resets })
	fireUntil(t, quiet, logs, "the restore applied", func() bool { return lastResult(r) == ReloadApplied })
	if r.pid("a:x") != x || r.lastSuccess() != 1 {
		t.Fatalf("a:x %v (was %v), last success %v", r.pid("a:x"), x, r.lastSuccess())
	}
}

// Not a bug (kept as cover): a broken file in a new subdirectory is
// rejected, the look again (same errors) is quiet, and removing the
// subdirectory (rm -rf) applies and clears the rejection.
func TestBrokenNewSubdirectoryRemoved(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	quiet, logs := r.watchSettled()
	resets := quiet.resets.Load()
	r.write("sub/bad.yaml", "namespace: b\nentries:\n  - {name: z, kind: test.svc, sise: 2}\n")
	waitUntil(t, "the new directory seen", func() bool { return quiet.resets.Load() > resets })
	fireUntil(t, quiet, logs, "the rejection and its quiet look again", func() bool {
		return r.rejected() >= 1 && len(logs.find(slog.LevelDebug, "rescan: the configuration is as invalid")) >= 1
	})
	rejected := r.rejected()
	resets = quiet.resets.Load()
	if err := os.RemoveAll(filepath.Join(r.dir, "sub")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the removal seen", func() bool { return quiet.resets.Load() > resets })
	fireUntil(t, quiet, logs, "the removal applied", func() bool { return lastResult(r) == ReloadApplied && r.lastSuccess() == 1 })
	if r.rejected() != rejected {
		t.Errorf("rejected %v, was %v", r.rejected(), rejected)
	}
}

// A source named by an absolute path that is not clean
// (file:///srv/app/conf/../lua/w.lua): the decoder keeps the path as
// written (filepath.Join cleans relative ones, an absolute one is taken
// as is), the watcher keys its file set by it, and the kernel's events
// name the clean path: a save of the script is dropped as irrelevant and
// a:x keeps its old code.
func TestWatchSeesSourceNamedByUncleanAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	src := "file://" + filepath.Join(dir, "lua") + "/../lua/w.lua"
	base := "namespace: a\nentries:\n  - {name: x, kind: test.svc, source: \"" + src + "\", lifecycle: {auto_start: true}}\n"
	if err := os.MkdirAll(filepath.Join(dir, "lua"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lua", "w.lua"), []byte("return 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newReloadEnv(t, map[string]string{"c.yaml": base})
	x := r.pid("a:x")
	quiet, logs := r.watchSettled()
	resets := quiet.resets.Load()
	saveRename(t, filepath.Join(dir, "lua", "w.lua"), "return 2")
	deadline := time.Now().Add(5 * time.Second)
	for quiet.resets.Load() == resets {
		if time.Now().After(deadline) {
			t.Fatalf("a save of %s produced no reload\n%s", src, logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	fireUntil(t, quiet, logs, "a:x restarted on the new script", func() bool { p := r.pid("a:x"); return !p.IsZero() && p != x })
}

// A configuration mounted as Kubernetes mounts a ConfigMap: c.yaml is a
// symbolic link to ..data/c.yaml, ..data a link to a timestamped
// directory; an update writes a new directory and renames a new ..data
// link over the old one, atomically. docs/configuration.md: "a symbolic
// link counts for what it names". Every name the update touches starts
// with a dot, and the watcher drops those as editor temporaries, so the
// update is never reloaded.
func TestWatchSeesSymlinkSwapUpdate(t *testing.T) {
	dir := t.TempDir()
	mk := func(ver, body string) {
		d := filepath.Join(dir, ".."+ver)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "c.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {auto_start: true}}\n"
	mk("v1", base)
	if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/c.yaml", filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	kinds, _ := kindtest.Kinds()
	r := &reloadEnv{t: t, dir: dir, loader: &config.Loader{Kinds: kinds}, logs: &syncBuffer{}}
	r.rt = NewRuntime(RuntimeOptions{Node: process.NewNode(process.Options{Name: "t"}), Kinds: kinds,
		Logger: slog.New(slog.NewJSONHandler(r.logs, nil)), StopTimeout: time.Second})
	t.Cleanup(func() { r.rt.Stop(context.Background()) })
	cfg, err := r.loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	quiet, logs := r.watchSettled()

	resets := quiet.resets.Load()
	mk("v2", base+"  - {name: y, kind: test.svc, lifecycle: {auto_start: true}}\n")
	if err := os.Symlink("..v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "..v1"))
	deadline := time.Now().Add(5 * time.Second)
	for quiet.resets.Load() == resets {
		if time.Now().After(deadline) {
			t.Fatalf("the ConfigMap-style update (..data swapped) produced no reload\n%s", logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	fireUntil(t, quiet, logs, "a:y running", func() bool { return !r.pid("a:y").IsZero() })
}
