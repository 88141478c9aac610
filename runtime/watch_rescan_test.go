package runtime

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/internal/readfile"
)

// The watcher's start-up rescan against retries, signals, broken files
// and directories replaced.

// A rescan whose load fails for a transient reason is retried; the retry
// finds the files as they were loaded. It is still the rescan nobody
// asked for, so it should be as quiet as the rescan would have been: not
// counted, not recorded, no "reload applied" line.
func TestRescanRetriedAfterTransientFailureIsQuiet(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	x := r.pid("a:x")
	var failing atomic.Int32
	readfile.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		if failing.Add(-1) >= 0 {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
		}
		return os.OpenFile(name, flag, perm)
	}
	t.Cleanup(func() { readfile.OpenFile = os.OpenFile })
	_, quiet, logs := r.watchWith(WatchOptions{RetryDelay: 10 * time.Millisecond})
	waitUntil(t, "the rescan armed", func() bool { return quiet.resets.Load() >= 1 })
	failing.Store(1) // the rescan's first open fails: EMFILE
	quiet.fire()
	waitUntil(t, "the rescan failed and its retry ran", func() bool {
		return len(logs.find(slog.LevelWarn, "reload will be retried")) == 1 &&
			(len(logs.find(slog.LevelInfo, "reload applied")) > 0 ||
				len(logs.find(slog.LevelDebug, "rescan: the files are as they were loaded")) > 0 ||
				len(logs.find(slog.LevelDebug, "reload details")) > 0)
	})
	if r.pid("a:x") != x {
		t.Fatal("a:x restarted")
	}
	if got := logs.find(slog.LevelInfo, "reload applied"); len(got) != 0 {
		t.Errorf("the retry of a rescan that found nothing changed logged at info (cause %q):\n%s", got[0]["cause"], logs)
	}
	if r.applied() != 0 || len(r.rt.ReloadHistory()) != 0 {
		t.Errorf("the retry of a rescan that found nothing changed: counted %v, recorded %d; want 0, 0",
			r.applied(), len(r.rt.ReloadHistory()))
	}
}

// A SIGHUP (Trigger) and Reload racing the start-up rescan: every Reload
// gets an answer, the asked reload is counted, the rescan adds nothing.
func TestSignalRacesRescan(t *testing.T) {
	for i := 0; i < 20; i++ {
		r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
		w, quiet, logs := r.watchWith(WatchOptions{})
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := w.Reload(ctx)
			done <- err
		}()
		if i%2 == 0 {
			quiet.fire()
		} else {
			w.Trigger()
		}
		if err := <-done; err != nil {
			t.Fatalf("round %d: Reload: %v", i, err)
		}
		w.Close()
		if r.applied() < 1 {
			t.Fatalf("round %d: the asked reload was not counted (%v)", i, r.applied())
		}
		if n := len(logs.find(slog.LevelError, "")); n != 0 {
			t.Fatalf("round %d: errors logged:\n%s", i, logs)
		}
	}
}

// Files broken between the load and the watch: the rescan rejects them,
// nothing stops, and the fix is applied.
func TestRescanOfBrokenFilesThenFix(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	x := r.pid("a:x")
	r.write("c.yaml", "namespace: a\nentries: [ {name: x, kind: \n")
	quiet, logs := r.watchQuiet()
	waitUntil(t, "the rescan armed", func() bool { return quiet.resets.Load() >= 1 })
	quiet.fire()
	waitUntil(t, "the rescan rejected", func() bool { return r.rejected() == 1 })
	if r.pid("a:x") != x {
		t.Fatal("a:x changed on a rejected rescan")
	}
	resets := quiet.resets.Load()
	saveRename(t, filepath.Join(r.dir, "c.yaml"), watchBase+"  - {name: y, kind: test.svc, lifecycle: {auto_start: true}}\n")
	waitUntil(t, "the fix seen", func() bool { return quiet.resets.Load() > resets })
	quiet.fire()
	waitUntil(t, "the fix applied", func() bool { return !r.pid("a:y").IsZero() })
	if !strings.Contains(logs.String(), "reload rejected") {
		t.Errorf("no rejection logged:\n%s", logs)
	}
}

// A change adds an entry whose source is in a new directory, and its start
// fails: the change's reload is counted (Failed); the watch of the new
// directory arms a rescan, which finds the files as they were loaded and
// stays quiet: it neither retries the failed start nor counts.
func TestRescanAfterFailedStartIsQuiet(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	quiet, logs := r.watchQuiet()
	waitUntil(t, "the rescan armed", func() bool { return quiet.resets.Load() >= 1 })
	quiet.fire()
	waitUntil(t, "the rescan done", func() bool { return len(logs.find(slog.LevelDebug, "reload details")) == 1 })
	kindsSvc(r).FailStarts.Store(1)
	resets := quiet.resets.Load()
	os.MkdirAll(filepath.Join(r.dir, "lua2"), 0o755)
	r.write("lua2/y.lua", "return 1")
	saveRename(t, filepath.Join(r.dir, "c.yaml"), watchBase+"  - {name: y, kind: test.svc, source: \"file://lua2/y.lua\", lifecycle: {auto_start: true, restart: {type: temporary}}}\n")
	waitUntil(t, "the save seen", func() bool { return quiet.resets.Load() > resets })
	quiet.fire()
	waitUntil(t, "the change applied", func() bool { return len(logs.find(slog.LevelDebug, "reload details")) == 2 })
	// The new directory lua2 (watched since the change's reload) arms a
	// rescan: end quiet periods until it has run (an end with nothing
	// pending does nothing).
	deadline := time.Now().Add(10 * time.Second)
	for len(logs.find(slog.LevelDebug, "reload details")) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no rescan after the change:\n%s", logs)
		}
		select {
		case quiet.c <- time.Now():
		case <-time.After(10 * time.Millisecond):
		}
	}
	// (A late file event of the save may make the third reload a change,
	// which is the look again too: counted, as a change is.)
	got := logs.find(slog.LevelInfo, "reload applied")
	for _, a := range got {
		if a["cause"] == "rescan" {
			t.Errorf("a rescan that changed nothing logged at info:\n%s", logs)
		}
	}
	if int(r.applied()) != len(got) || len(r.rt.ReloadHistory()) != len(got) {
		t.Errorf("counted %v, recorded %d; want %d (the reloads logged, none a rescan)", r.applied(), len(r.rt.ReloadHistory()), len(got))
	}
	if in, _ := r.rt.Info("a:y"); in.Status != StatusFailed {
		t.Errorf("a:y is %v: a reload that changed nothing tried its start again", in.Status)
	}
}

func kindsSvc(r *reloadEnv) *kindtest.SvcKind {
	k, _ := r.loader.Kinds.Kind("test.svc")
	return k.(*kindtest.SvcKind)
}

// A configuration directory replaced within one quiet period (rm -rf
// conf.d && cp -r new conf.d): the reload applies the new files, and a
// save in the new directory afterwards is seen. inotify drops the watch
// of a deleted directory; the watcher must watch the new one.
func TestReplacedDirectoryStaysWatched(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1",
		"conf.d/d.yaml": "namespace: d\nentries:\n  - {name: p, kind: test.svc, lifecycle: {auto_start: true}}\n"})
	quiet, logs := r.watchQuiet()
	waitUntil(t, "the rescan armed", func() bool { return quiet.resets.Load() >= 1 })
	quiet.fire()
	waitUntil(t, "the rescan done", func() bool { return len(logs.find(slog.LevelDebug, "reload details")) == 1 })
	resets := quiet.resets.Load()
	rescans := len(logs.find(slog.LevelDebug, "rescan: "))
	idle := len(logs.find(slog.LevelInfo, "reload applied: added=0 updated=0 removed=0"))
	d := filepath.Join(r.dir, "conf.d")
	if err := os.RemoveAll(d); err != nil {
		t.Fatal(err)
	}
	r.write("conf.d/d.yaml", "namespace: d\nentries:\n  - {name: p, kind: test.svc, lifecycle: {auto_start: true}}\n  - {name: q, kind: test.svc, lifecycle: {auto_start: true}}\n")
	waitUntil(t, "the replacement seen", func() bool { return quiet.resets.Load() > resets })
	deadline := time.Now().Add(10 * time.Second)
	for r.pid("d:q").IsZero() {
		if time.Now().After(deadline) {
			t.Fatalf("the replaced directory's files were not applied:\n%s", logs)
		}
		select {
		case quiet.c <- time.Now():
		case <-time.After(10 * time.Millisecond):
		}
	}
	// The new conf.d is watched once the reload's track has run, which
	// arms a rescan (a directory newly watched): the reload after it —
	// that rescan, quiet, or one a late event of the rewrite started —
	// finds the files as loaded. Only then is a save there sure to be
	// seen.
	lookedAgain := func() bool {
		return len(logs.find(slog.LevelDebug, "rescan: ")) > rescans ||
			len(logs.find(slog.LevelInfo, "reload applied: added=0 updated=0 removed=0")) > idle
	}
	for !lookedAgain() {
		if time.Now().After(deadline) {
			t.Fatalf("no rescan after the replaced directory was watched again:\n%s", logs)
		}
		select {
		case quiet.c <- time.Now():
		case <-time.After(10 * time.Millisecond):
		}
	}
	resets = quiet.resets.Load()
	saveRename(t, filepath.Join(d, "d.yaml"), "namespace: d\nentries:\n  - {name: p, kind: test.svc, lifecycle: {auto_start: true}}\n  - {name: q, kind: test.svc, lifecycle: {auto_start: true}}\n  - {name: s, kind: test.svc, lifecycle: {auto_start: true}}\n")
	began := time.Now()
	for quiet.resets.Load() == resets {
		if time.Since(began) > 5*time.Second {
			t.Fatalf("a save in the replaced conf.d produced no reload (its watch was lost):\n%s", logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
