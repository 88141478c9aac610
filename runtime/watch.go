package runtime

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/backoff"
	"github.com/proctor-run/proctor/internal/readfile"
	"github.com/proctor-run/proctor/value"
)

// WatchOptions configure Watch. Runtime, Loader, Paths and Config are
// required.
type WatchOptions struct {
	Runtime *Runtime
	Loader  *config.Loader
	// Paths are the files and directories the configuration was loaded
	// from; every reload loads them again.
	Paths []string
	// Config is the configuration in force when watching starts.
	Config *config.Config
	// Logger for reload results. Default: slog.Default().
	Logger *slog.Logger
	// Debounce is how long the files must stay quiet before a reload, so
	// an editor's burst of writes is one reload. Default: 100ms.
	Debounce time.Duration
	// Manual watches no files: only Trigger (SIGHUP) reloads. For
	// --no-watch, and for file systems that give no change notifications,
	// where SIGHUP is the way to reload.
	Manual bool
	// RetryDelay is the first wait before a reload that failed for a
	// transient reason (Transient: too many open files, say) is tried
	// again; each further failure doubles it, up to RetryMaxDelay. Such a
	// reload is retried until it applies or is rejected, or a change or
	// Trigger reloads anyway. Default: 250ms.
	RetryDelay time.Duration
	// RetryMaxDelay caps the wait between retries. Default: 30s.
	RetryMaxDelay time.Duration

	// quiet, set only by tests, replaces the debounce's timer, so that a
	// test decides when the files have been quiet long enough.
	quiet debounceTimer
}

// debounceTimer is the clock of the watcher's debounce: Reset starts the
// quiet period again, Chan delivers when it has passed.
type debounceTimer interface {
	Chan() <-chan time.Time
	Reset(d time.Duration) bool
	Stop() bool
}

// stdTimer is a debounceTimer on a time.Timer.
type stdTimer struct{ *time.Timer }

func (t stdTimer) Chan() <-chan time.Time { return t.C }

// Watcher reloads the configuration when its files change. It watches
// directories, not files (editors that save by renaming a temporary file
// over the original would leave a file watch behind): the directory of
// every YAML file and Lua source in use, and every directory under the
// configuration directories, so new files there join on the next reload.
type Watcher struct {
	opts    WatchOptions
	log     *slog.Logger
	fs      *fsnotify.Watcher
	trigger chan struct{}
	asks    chan chan<- reloadOutcome // Reload's: answered with the outcome of the reload each asked for
	// ctx ends at Close: it abandons a reload's load and the watcher's own
	// stats and walks wherever they are, and ends the watcher's loop.
	ctx     context.Context
	cancel  context.CancelFunc
	stopped chan struct{}

	// Owned by the watcher's goroutine.
	rescan bool // a directory was newly watched: reload once more
	dirs   map[string]bool
	files  map[string]bool // YAML files and sources in use (absolute)
	// awaited are directories of files not made yet (the directory of
	// a script a rejected load named): the nearest one that exists is
	// watched instead, and its making is a change.
	awaited map[string]bool
	// links are the symbolic links the files in use resolve through
	// (linkChain): one replaced changes what a file names.
	links map[string]bool
	roots []string // configuration directories (absolute)

	stat func(string) (fs.FileInfo, error) // os.Stat; tests make it hang
}

// watchStat is how a watcher stats what it watches: os.Stat, which a test
// replaces with one that hangs, as a stat of a hung NFS mount does.
var watchStat = os.Stat

// Watch starts watching (with Manual, only waiting for Trigger).
func Watch(opts WatchOptions) (*Watcher, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = 250 * time.Millisecond
	}
	if opts.RetryMaxDelay <= 0 {
		opts.RetryMaxDelay = 30 * time.Second
	}
	w := &Watcher{
		opts: opts, log: opts.Logger,
		trigger: make(chan struct{}, 1), asks: make(chan chan<- reloadOutcome), stopped: make(chan struct{}),
		dirs: map[string]bool{}, stat: watchStat,
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	if opts.Manual {
		go w.run()
		return w, nil
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w.fs = fw
	w.track(opts.Config)
	if len(w.dirs) == 0 {
		fw.Close()
		return nil, errors.New("watch: nothing to watch")
	}
	go w.run()
	return w, nil
}

// Trigger forces a reload (SIGHUP). It is the one reload that reads the
// environment again (Loader.ReadEnvironment): a file saved meanwhile
// reloads with the environment the runner had.
func (w *Watcher) Trigger() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// ErrWatcherClosed is what Reload returns once Close was called.
var ErrWatcherClosed = value.Sentinel("runtime.watcher_closed", value.KindStopped, "the configuration watcher is closed")

// Reload reloads as Trigger does (the environment is read again) and
// waits for the outcome: the summary of what the reload changed, or why it
// changed nothing (a rejected configuration's Errors, a transient failure,
// which is retried as after a change). A reload under way finishes first;
// the one asked for follows it, shared with every Trigger and Reload that
// comes meanwhile. ctx bounds only the wait: the reload goes on.
func (w *Watcher) Reload(ctx context.Context) (ReloadSummary, error) {
	res := make(chan reloadOutcome, 1)
	select {
	case w.asks <- res:
	case <-w.ctx.Done():
		return ReloadSummary{}, ErrWatcherClosed
	case <-ctx.Done():
		return ReloadSummary{}, ctx.Err()
	}
	select {
	case out := <-res:
		return out.sum, out.err
	case <-ctx.Done():
		return ReloadSummary{}, ctx.Err()
	}
}

// Close stops watching; a reload in progress finishes first.
func (w *Watcher) Close() error {
	w.cancel()
	<-w.stopped
	return nil
}

// track updates the watch set for cfg, and for the files read names (a
// failed load's: Loader.Read).
func (w *Watcher) track(cfg *config.Config, read ...string) {
	if w.fs == nil {
		return // Manual: nothing is watched
	}
	w.files = map[string]bool{}
	want := map[string]bool{}
	w.roots = w.roots[:0]
	for _, p := range w.opts.Paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		// A stat or a walk that does not return (a hung NFS or FUSE
		// mount) is left behind under the loader's read deadline, as a
		// load's are: the watcher goes on, and Close is not held up.
		var isDir bool
		dirs := map[string]bool{}
		if err := w.within(abs, func() {
			fi, err := w.stat(abs)
			if isDir = err == nil && fi.IsDir(); !isDir {
				return
			}
			filepath.WalkDir(abs, func(path string, d fs.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				if path != abs && strings.HasPrefix(d.Name(), ".") {
					return fs.SkipDir
				}
				dirs[path] = true
				return nil
			})
		}); err != nil {
			w.log.Warn("cannot watch path", "path", abs, "error", err)
			continue
		}
		if isDir {
			w.roots = append(w.roots, abs)
			for d := range dirs {
				want[d] = true
			}
			continue
		}
		// A named file: watch its directory even while the file is gone,
		// so its return is seen.
		w.files[abs] = true
		want[filepath.Dir(abs)] = true
	}
	if cfg != nil {
		for _, f := range cfg.Files {
			w.files[f] = true
			want[filepath.Dir(f)] = true
		}
		for _, s := range cfg.Sources() {
			w.files[s] = true
			want[filepath.Dir(s)] = true
		}
	}
	for _, f := range read {
		w.files[f] = true
		want[filepath.Dir(f)] = true
	}
	w.links = map[string]bool{}
	for f := range w.files {
		var chain []string
		if err := w.within(f, func() { chain = linkChain(f) }); err != nil {
			continue
		}
		for _, l := range chain {
			w.links[l] = true
			want[filepath.Dir(l)] = true
		}
	}
	w.awaited = map[string]bool{}
	for d := range want {
		if w.dirs[d] {
			continue
		}
		// A directory not made yet cannot be watched: watch the nearest
		// one that exists, to see it made.
		for a := d; ; {
			_, err := readfile.Stat(w.ctx, a, w.readTimeout(), w.stat)
			if err == nil || !errors.Is(err, fs.ErrNotExist) {
				if a != d {
					want[a] = true
				}
				break
			}
			w.awaited[a] = true
			delete(want, a)
			up := filepath.Dir(a)
			if up == a {
				break
			}
			a = up
		}
	}
	for d := range w.dirs {
		if !want[d] {
			w.fs.Remove(d)
			delete(w.dirs, d)
		}
	}
	for d := range want {
		if w.dirs[d] {
			continue
		}
		if err := w.fs.Add(d); err != nil {
			w.log.Warn("cannot watch directory", "dir", d, "error", err)
			continue
		}
		w.dirs[d] = true
		// What changed in d between the load that found it and this watch
		// produced no event: look again once it is watched.
		w.rescan = true
	}
}

// maxLinkHops bounds linkChain, as the kernel's ELOOP does (40 on Linux).
const maxLinkHops = 40

// linkChain returns the symbolic links that resolving path goes through:
// path itself when it is one, and any on the way, each as an absolute
// path. Kubernetes mounts a ConfigMap's key as c.yaml -> ..data/c.yaml,
// with ..data -> ..2026_12_03_…, and updates it by renaming a new ..data
// link over the old one: nothing happens to c.yaml itself, and ..data is
// a dot name, which the watcher otherwise takes for an editor's
// temporary file.
func linkChain(path string) []string {
	sep := string(filepath.Separator)
	split := func(p string) []string { return strings.Split(strings.TrimPrefix(filepath.Clean(p), sep), sep) }
	var out []string
	cur, rest := sep, split(path)
	for len(rest) > 0 {
		next := filepath.Join(cur, rest[0])
		rest = rest[1:]
		fi, err := os.Lstat(next)
		if err != nil {
			return out
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if len(out) == maxLinkHops {
			return out
		}
		out = append(out, next)
		target, err := os.Readlink(next)
		if err != nil {
			return out
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(cur, target)
		}
		cur, rest = sep, append(split(target), rest...)
	}
	return out
}

// readTimeout is the loader's read deadline (zero: readfile's default).
func (w *Watcher) readTimeout() time.Duration {
	if w.opts.Loader == nil {
		return 0
	}
	return w.opts.Loader.ReadTimeout
}

// within runs f, a stat or a walk of path, under the loader's read
// deadline (readfile.Within); Close abandons the wait.
func (w *Watcher) within(path string, f func()) error {
	return readfile.Within(w.ctx, path, w.readTimeout(), f)
}

// relevant reports whether an event may change the configuration.
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	if w.files[ev.Name] {
		return true
	}
	if ev.Op.Has(fsnotify.Create) && w.awaited[ev.Name] || w.links[ev.Name] {
		return true
	}
	base := filepath.Base(ev.Name)
	if strings.HasPrefix(base, ".") {
		return false
	}
	for _, r := range w.roots {
		if ev.Name == r || strings.HasPrefix(ev.Name, r+string(filepath.Separator)) {
			if config.IsConfigName(base) {
				return true
			}
			// A new or removed directory may hold (or have held) config.
			if ev.Op.Has(fsnotify.Create) {
				if fi, err := readfile.Stat(w.ctx, ev.Name, w.readTimeout(), w.stat); err == nil && fi.IsDir() {
					return true
				}
			}
			if ev.Op.Has(fsnotify.Remove) || ev.Op.Has(fsnotify.Rename) {
				return w.dirs[ev.Name]
			}
		}
	}
	return false
}

func (w *Watcher) run() {
	defer close(w.stopped)
	// A Manual watcher has no file events: nil channels never deliver.
	var (
		events <-chan fsnotify.Event
		errs   <-chan error
	)
	if w.fs != nil {
		defer w.fs.Close()
		events, errs = w.fs.Events, w.fs.Errors
	}
	timer := w.opts.quiet
	if timer == nil {
		t := time.NewTimer(time.Hour)
		t.Stop()
		timer = stdTimer{t}
	}
	defer timer.Stop()
	// pending is the cause of the reload the quiet period ends in ("" for
	// none): "change" for a file event, "rescan" for a look again at
	// directories newly watched, which a change overrides.
	pending := ""
	// rescan looks again once the directories newly watched have been
	// quiet for a debounce period: at start, what was saved between the
	// load and the watch (while the entries started) produced no event.
	rescan := func() {
		if !w.rescan {
			return
		}
		w.rescan = false
		if pending == "" {
			pending = "rescan"
		}
		timer.Reset(w.opts.Debounce)
	}
	changed := func() {
		pending = "change"
		timer.Reset(w.opts.Debounce)
	}
	// A reload that failed for a transient reason is tried again after a
	// growing delay; any reload resets it.
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	failures := 0
	// One reload runs at a time, on its own goroutine, so that changes
	// and signals that come meanwhile (a slow start may hold a reload for
	// its whole start timeout) are still read: they coalesce into one
	// reload that starts when the running one ends.
	var (
		running bool
		current string // the cause of the reload running, or of the last one
		queued  string // the cause of the reload to run next; "" for none
		results = make(chan reloadOutcome, 1)
		// Reload's callers: those of the reload running, and those of
		// the next one (which a Reload during a reload asks for).
		asked, askedNext []chan<- reloadOutcome
	)
	answer := func(to []chan<- reloadOutcome, out reloadOutcome) {
		for _, c := range to {
			c <- out // buffered, one outcome each
		}
	}
	start := func(cause string) {
		retry.Stop()
		if running {
			if queued == "" {
				w.log.Info("a reload is under way; this one follows it", "cause", cause)
			}
			// A signal also rereads the environment: it wins over a change.
			// (A rescan never comes here: a reload started since it was
			// armed is its look again, and clears it.)
			if queued != "signal" {
				queued = cause
			}
			return
		}
		if cause == "signal" {
			w.opts.Loader.ReadEnvironment()
		}
		running, current = true, cause
		// This reload loads after every directory it knows is watched: it
		// is the look again a rescan would be.
		w.rescan = false
		if pending == "rescan" {
			pending = ""
		}
		asked, askedNext = askedNext, nil
		go func() { results <- w.reload(cause) }()
	}
	finished := func(out reloadOutcome) {
		running = false
		answer(asked, out)
		asked = nil
		if out.track {
			w.track(out.cfg, out.read...)
		}
		rescan()
		if out.retry {
			delay := backoff.Policy{Initial: w.opts.RetryDelay, Max: w.opts.RetryMaxDelay}.Delay(failures)
			failures++
			w.log.Warn("reload will be retried", "in", delay, "attempt", failures)
			retry.Reset(delay)
		} else {
			failures = 0
		}
		if next := queued; next != "" {
			queued = ""
			start(next)
		}
	}
	defer func() {
		// Closing cancels the running reload (see reload); wait for it.
		if running {
			answer(asked, <-results)
		}
		answer(askedNext, reloadOutcome{err: ErrWatcherClosed})
	}()
	rescan() // Watch's track watched every directory anew
	for {
		select {
		case <-w.ctx.Done():
			return
		case out := <-results:
			finished(out)
		case ev, ok := <-events:
			if !ok {
				return
			}
			if w.relevant(ev) {
				changed()
			}
			// A watched directory removed or renamed has lost its watch
			// (the kernel drops it): forget it, so the next track watches
			// what is there anew and looks again.
			if (ev.Op.Has(fsnotify.Remove) || ev.Op.Has(fsnotify.Rename)) && w.dirs[ev.Name] {
				_ = w.fs.Remove(ev.Name)
				delete(w.dirs, ev.Name)
			}
		case err, ok := <-errs:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.log.Warn("file events were lost; rescanning the configuration")
				changed()
				continue
			}
			w.log.Warn("watching the configuration", "error", err)
		case <-w.trigger:
			timer.Stop()
			pending = ""
			start("signal")
		case c := <-w.asks:
			timer.Stop()
			pending = ""
			askedNext = append(askedNext, c)
			start("signal")
		case <-timer.Chan():
			if cause := pending; cause != "" {
				pending = ""
				start(cause)
			}
		case <-retry.C:
			// The reload to retry is the last one (any other start stops
			// the retry); a rescan's retry is the same look again nobody
			// asked for, as quiet as the rescan.
			if current == "rescan" {
				start("rescan")
			} else {
				start("retry")
			}
		}
	}
}

// reloadOutcome is how a reload ended, for the watcher's goroutine: the
// configuration whose files to watch (when track is set), and whether to
// retry; for Reload's callers, its summary or error.
type reloadOutcome struct {
	cfg   *config.Config
	track bool
	read  []string // a failed load's files and sources, watched too (Loader.Read)
	retry bool
	sum   ReloadSummary
	err   error
}

// reload loads and applies the configuration and logs the outcome: what
// to watch from now on, and whether the reload failed for a transient
// reason and should be tried again. It runs on a goroutine of its own and
// touches no state of the watcher's.
func (w *Watcher) reload(cause string) reloadOutcome {
	ctx := w.ctx // Close abandons the load
	start := time.Now()
	// A rescan that finds the files as they were loaded is no reload
	// anyone asked for: the runtime neither counts nor records it.
	rescan := cause == "rescan"
	cfg, sum, err := w.opts.Runtime.reload(ctx, w.opts.Loader, rescan, w.opts.Paths...)
	if err != nil {
		if ctx.Err() != nil {
			return reloadOutcome{err: ErrWatcherClosed} // closing: the load was abandoned
		}
		if config.Transient(err) {
			w.log.Error("reload failed for a reason that may pass; nothing changed", "cause", cause, "error", transientText(err))
			// The directories may have changed meanwhile; watching them
			// may have failed for the same reason.
			return reloadOutcome{cfg: w.opts.Runtime.Config(), track: true, read: w.opts.Loader.Read(), retry: true, err: err}
		}
		var es config.Errors
		if errors.As(err, &es) && errors.Is(err, errRejectedAgain) {
			w.log.Debug("rescan: the configuration is as invalid as the last reload found it; nothing changed", "errors", len(es), "cause", cause)
			return reloadOutcome{cfg: w.opts.Runtime.Config(), track: true, read: w.opts.Loader.Read(), err: err}
		}
		if errors.As(err, &es) {
			w.log.Error("reload rejected: the new configuration is invalid; nothing changed", "errors", len(es), "cause", cause)
			for _, e := range es {
				w.log.Error(e.Error())
			}
			// New directories may exist even though the config is broken,
			// and the fix may be a file only the rejected load named (a
			// script written after the YAML naming it): watch them too.
			return reloadOutcome{cfg: w.opts.Runtime.Config(), track: true, read: w.opts.Loader.Read(), err: err}
		}
		w.log.Error("reload failed", "error", err)
		return reloadOutcome{err: err}
	}
	took := time.Since(start).Round(time.Microsecond)
	if sum.unrecorded {
		w.log.Debug("rescan: the files are as they were loaded; nothing changed", "cause", cause, "took", took)
	} else {
		w.log.Info("reload applied: "+sum.String(), "cause", cause, "took", took)
	}
	w.log.Debug("reload details", "added", sum.Added, "updated", sum.Updated, "restarted", sum.Restarted, "removed", sum.Removed, "unchanged", sum.Unchanged)
	if len(sum.Failed) > 0 {
		w.log.Warn("reload: some entries did not start", "failed", sum.Failed)
	}
	return reloadOutcome{cfg: cfg, track: true, sum: sum}
}

// transientText is the first transient error of a failed load, which
// says why it may pass.
func transientText(err error) string {
	var es config.Errors
	if errors.As(err, &es) {
		for _, e := range es {
			if e.Err != nil && config.Transient(e.Err) {
				return e.Error()
			}
		}
	}
	return err.Error()
}
