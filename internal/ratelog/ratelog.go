// Package ratelog bounds repeated log lines: a crash loop, a restart loop
// or a flood of rejected requests must stay readable and must not fill the
// disk, yet nothing may vanish without a trace. Each key (an entry, a
// peer) may log Burst lines per Window; the lines past that are counted,
// and one line at the window's end says how many were suppressed.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults of Limiter.
const (
	DefaultBurst  = 5
	DefaultWindow = 10 * time.Second
	// maxKeys bounds the windows kept: past it, windows that ended and
	// owe no line are forgotten.
	maxKeys = 1024
)

// Limiter rate-limits log lines by key. The zero value is not usable;
// call New. It is safe for concurrent use.
type Limiter struct {
	burst   int
	window  time.Duration
	keyAttr string
	mu      sync.Mutex
	windows map[string]*window
}

type window struct {
	end        time.Time
	logged     int
	suppressed int
	level      slog.Level
	log        *slog.Logger
	msg        string
}

// New returns a Limiter that lets burst lines of each key through in
// every window of that length (zero or less: the defaults) and names the key in the line that
// counts suppressed ones with the attribute keyAttr ("entry").
func New(burst int, every time.Duration, keyAttr string) *Limiter {
	if burst <= 0 {
		burst = DefaultBurst
	}
	if every <= 0 {
		every = DefaultWindow
	}
	return &Limiter{burst: burst, window: every, keyAttr: keyAttr, windows: map[string]*window{}}
}

// Log logs msg with args at level through log unless key is past its
// burst in the current window; it reports whether the line was logged.
// The first line suppressed in a window schedules the line that counts
// them at the window's end.
func (l *Limiter) Log(log *slog.Logger, level slog.Level, key, msg string, args ...any) bool {
	if !l.Allow(log, level, key, msg) {
		return false
	}
	log.Log(context.Background(), level, msg, args...)
	return true
}

// Allow counts one line of key and reports whether it may be logged; a
// caller that builds costly attributes asks first. log, level and msg are
// those of the line, for the count of suppressed ones.
func (l *Limiter) Allow(log *slog.Logger, level slog.Level, key, msg string) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windows[key]
	if w == nil || now.After(w.end) {
		if len(l.windows) >= maxKeys {
			l.sweep(now)
		}
		w = &window{end: now.Add(l.window)}
		l.windows[key] = w
	}
	if w.logged < l.burst {
		w.logged++
		return true
	}
	w.suppressed++
	if w.suppressed == 1 {
		w.log, w.level, w.msg = log, level, msg
		time.AfterFunc(w.end.Sub(now), func() { l.flush(key, w) })
	}
	return false
}

// flush logs how many of key's lines window w suppressed.
func (l *Limiter) flush(key string, w *window) {
	l.mu.Lock()
	n, logged := w.suppressed, w.logged
	if l.windows[key] == w {
		delete(l.windows, key)
	}
	l.mu.Unlock()
	w.log.Log(context.Background(), w.level, "log lines suppressed", l.keyAttr, key, "message", w.msg,
		"suppressed", n, "logged", logged, "window", l.window.String())
}

// sweep forgets windows that ended and owe no line; l.mu is held.
func (l *Limiter) sweep(now time.Time) {
	for k, w := range l.windows {
		if now.After(w.end) && w.suppressed == 0 {
			delete(l.windows, k)
		}
	}
}
