package runtime

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/process"
)

// recordLog is a slog handler that keeps every record, at every level.
type recordLog struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *recordLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *recordLog) WithGroup(string) slog.Handler            { return l }
func (l *recordLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}

// find returns the attributes of the records at level whose message
// starts with prefix, one map per record.
func (l *recordLog) find(level slog.Level, prefix string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.recs {
		if r.Level != level || !strings.HasPrefix(r.Message, prefix) {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		out = append(out, attrs)
	}
	return out
}

func (l *recordLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.recs {
		b.WriteString(r.Level.String() + " " + r.Message + "\n")
	}
	return b.String()
}

// watchQuiet starts watching r's files from the configuration in force,
// with a debounce the test ends (quiet) and a logger that keeps every
// record.
func (r *reloadEnv) watchQuiet() (*manualTimer, *recordLog) {
	r.t.Helper()
	_, quiet, logs := r.watchWith(WatchOptions{})
	return quiet, logs
}

// watchWith is watchQuiet with opts (its runtime, loader, config, logger
// and debounce are set here, and its paths when it has none: r.dir) and
// the watcher too.
func (r *reloadEnv) watchWith(opts WatchOptions) (*Watcher, *manualTimer, *recordLog) {
	r.t.Helper()
	quiet, logs := newManualTimer(), &recordLog{}
	if len(opts.Paths) == 0 {
		opts.Paths = []string{r.dir}
	}
	opts.Runtime, opts.Loader, opts.Config = r.rt, r.loader, r.rt.Config()
	opts.Logger, opts.quiet = slog.New(logs), quiet
	w, err := Watch(opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { w.Close() })
	return w, quiet, logs
}

// TestWatchAppliesSaveMadeDuringStart: a file saved after the load the
// runtime started from but before the watch was armed produced no event;
// the watcher looks again once it watches (after its debounce) and
// applies it, with no further file event.
func TestWatchAppliesSaveMadeDuringStart(t *testing.T) {
	for _, tc := range []struct {
		name, file, body string
		applied          func(r *reloadEnv, x process.PID) bool
	}{
		{"yaml entry", "c.yaml", strings.Replace(watchBase, "kind: test.svc,", "kind: test.svc, size: 2,", 1),
			func(r *reloadEnv, _ process.PID) bool {
				e, ok := r.rt.Entry("a:x")
				return ok && e.Spec.(*kindtest.SvcSpec).Size == 2 && !r.pid("a:x").IsZero()
			}},
		{"lua source", "lua/w.lua", "return 2",
			func(r *reloadEnv, x process.PID) bool { p := r.pid("a:x"); return !p.IsZero() && p != x }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
			x := r.pid("a:x")
			// Saved while the entries started: the runtime runs the
			// configuration loaded before it, and the watch below is the
			// first, so no event reports the save.
			r.write(tc.file, tc.body)
			if tc.applied(r, x) {
				t.Fatal("the save applied before any reload")
			}
			quiet, logs := r.watchQuiet()
			waitUntil(t, "the rescan armed", func() bool { return quiet.resets.Load() >= 1 })
			if n := quiet.resets.Load(); n != 1 {
				t.Fatalf("%d debounce resets before the quiet period ended: want the rescan's alone (no file event)", n)
			}
			quiet.fire()
			waitUntil(t, "the save made during start-up applied", func() bool { return tc.applied(r, x) })
			waitUntil(t, "the reload that applied it logged", func() bool {
				return len(logs.find(slog.LevelInfo, "reload applied: ")) > 0
			})
			got := logs.find(slog.LevelInfo, "reload applied: ")
			if len(got) != 1 || got[0]["cause"] != "rescan" {
				t.Fatalf("want one applied reload, caused by the rescan:\n%s", logs)
			}
			if r.applied() != 1 || len(r.rt.ReloadHistory()) != 1 {
				t.Fatalf("a rescan that changed something: counted %v, recorded %d; want 1, 1", r.applied(), len(r.rt.ReloadHistory()))
			}
		})
	}
}

// TestWatchQuietRescanAtStart: when nothing changed between the load and
// the watch, the watcher's look again changes nothing and says so at
// debug level only: no "reload applied" line right after start, no
// restart, nothing counted or recorded. A save after that reloads and
// logs as always.
func TestWatchQuietRescanAtStart(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	x := r.pid("a:x")
	quiet, logs := r.watchQuiet()
	waitUntil(t, "the rescan armed", func() bool { return quiet.resets.Load() >= 1 })
	quiet.fire()
	waitUntil(t, "the rescan done", func() bool {
		return len(logs.find(slog.LevelDebug, "rescan: the files are as they were loaded; nothing changed")) == 1
	})
	if got := logs.find(slog.LevelInfo, "reload applied"); len(got) != 0 {
		t.Fatalf("a rescan that changed nothing logged at info:\n%s", logs)
	}
	if r.pid("a:x") != x {
		t.Fatal("a rescan that changed nothing restarted a:x")
	}
	if r.applied() != 0 || len(r.rt.ReloadHistory()) != 0 {
		t.Fatalf("a rescan that changed nothing: counted %v, recorded %d; want 0, 0", r.applied(), len(r.rt.ReloadHistory()))
	}

	resets := quiet.resets.Load()
	saveRename(t, filepath.Join(r.dir, "c.yaml"), watchBase+"  - {name: y, kind: test.svc, lifecycle: {auto_start: true}}\n")
	waitUntil(t, "the save seen", func() bool { return quiet.resets.Load() > resets })
	quiet.fire()
	waitUntil(t, "the save applied and logged", func() bool {
		got := logs.find(slog.LevelInfo, "reload applied: added=1 ")
		return !r.pid("a:y").IsZero() && len(got) == 1 && got[0]["cause"] == "change"
	})
	if r.pid("a:x") != x || r.applied() != 1 {
		t.Fatalf("after a save: a:x %v (was %v), %v reloads counted", r.pid("a:x"), x, r.applied())
	}
}

// A rescan that finds the configuration as broken as the reload before it
// found it is no second rejection: it is neither counted nor recorded nor
// logged at error again. (A save that broke the files and made a
// directory had them rejected twice: by the reload, then by the rescan of
// the new directory.) Broken in another way, it is a rejection again.
func TestWatchQuietRescanOfARejectedConfig(t *testing.T) {
	for _, tc := range []struct {
		name          string
		atRescan      string // the field the files are broken with when the rescan loads them
		wantRejected  float64
		wantErrorLogs int
	}{
		{"as broken as before", "nonsense", 1, 0},
		{"broken another way", "other_nonsense", 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
			broken := func(field string) {
				r.write("c.yaml", watchBase+"  - {name: y, kind: test.svc, "+field+": 1}\n")
			}
			// A reload rejected before the watcher starts is the last
			// attempt its start-up rescan finds.
			broken("nonsense")
			if _, _, err := r.rt.Reload(context.Background(), r.loader, r.dir); err == nil {
				t.Fatal("the broken files were not rejected")
			}
			broken(tc.atRescan)
			quiet, logs := r.watchQuiet()
			waitUntil(t, "the rescan armed", func() bool { return quiet.resets.Load() >= 1 })
			quiet.fire()
			rejections := func() int {
				return len(logs.find(slog.LevelError, "reload rejected: the new configuration is invalid; nothing changed"))
			}
			waitUntil(t, "the rescan done", func() bool {
				return rejections() == 1 || len(logs.find(slog.LevelDebug, "rescan: the configuration is as invalid as the last reload found it; nothing changed")) == 1
			})
			if rejections() != tc.wantErrorLogs || r.rejected() != tc.wantRejected || len(r.rt.ReloadHistory()) != int(tc.wantRejected) {
				t.Fatalf("after the rescan: %d rejections logged, %v counted, %d recorded; want %d, %v, %v:\n%s",
					rejections(), r.rejected(), len(r.rt.ReloadHistory()), tc.wantErrorLogs, tc.wantRejected, tc.wantRejected, logs)
			}
		})
	}
}
