package logging

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
	// DefaultMaxKeys bounds the keys a Limiter tracks at once; past it,
	// the lines of new keys share one window (an attacker who varies the
	// key, its source address say, gets Burst lines per Window in all).
	DefaultMaxKeys = 1024
)

// Limiter rate-limits log lines per key (an entry, a remote address): at
// most Burst lines per Window for each key. The lines past it are counted,
// and when the window ends, the report function given with the first of
// them is called once with their number, so that a flood cannot fill the
// log and is still seen. The zero value takes the defaults; a Limiter must
// not be copied after first use.
type Limiter struct {
	Burst   int
	Window  time.Duration
	MaxKeys int

	mu      sync.Mutex
	windows map[string]*limitWindow
}

// limitWindow counts one key's lines since its window began.
type limitWindow struct {
	end        time.Time
	logged     int
	suppressed int
}

// overflowKey is the key of the lines of new keys past MaxKeys.
const overflowKey = "\x00overflow"

// Allow counts a line of key and reports whether to log it. The first line
// suppressed in a window schedules report(suppressed, logged) at the
// window's end, so it runs on a timer's goroutine: it must only log.
func (l *Limiter) Allow(key string, report func(suppressed, logged int)) bool {
	burst, window, maxKeys := l.Burst, l.window(), l.MaxKeys
	if burst <= 0 {
		burst = DefaultBurst
	}
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windows[key]
	if w == nil || now.After(w.end) {
		if l.windows == nil {
			l.windows = map[string]*limitWindow{}
		}
		if w == nil && len(l.windows) >= maxKeys {
			l.sweep(now)
			if len(l.windows) >= maxKeys {
				key = overflowKey
				w = l.windows[key]
			}
		}
		if w == nil || now.After(w.end) {
			w = &limitWindow{end: now.Add(window)}
			l.windows[key] = w
		}
	}
	if w.logged < burst {
		w.logged++
		return true
	}
	w.suppressed++
	if w.suppressed == 1 && report != nil {
		time.AfterFunc(w.end.Sub(now), func() { l.flush(key, w, report) })
	}
	return false
}

// flush reports how many lines of key window w suppressed.
func (l *Limiter) flush(key string, w *limitWindow, report func(suppressed, logged int)) {
	l.mu.Lock()
	n, logged := w.suppressed, w.logged
	if l.windows[key] == w {
		delete(l.windows, key)
	}
	l.mu.Unlock()
	report(n, logged)
}

// sweep forgets windows that ended and owe no report; l.mu is held.
func (l *Limiter) sweep(now time.Time) {
	for k, w := range l.windows {
		if now.After(w.end) && w.suppressed == 0 {
			delete(l.windows, k)
		}
	}
}

// Log logs msg with args at level on log, unless key is past its limit.
// The lines it suppressed are reported at the window's end as one line:
// msg, with the key (under keyAttr), "suppressed" (their number) and
// "window".
func (l *Limiter) Log(log *slog.Logger, level slog.Level, keyAttr, key, msg string, args ...any) {
	if l.AllowLog(log, level, keyAttr, key, msg) {
		log.Log(context.Background(), level, msg, args...)
	}
}

// AllowLog is Allow for a caller that logs the line itself (it builds
// costly attributes only when the line is let through): the lines it
// suppresses are reported as Log reports them.
func (l *Limiter) AllowLog(log *slog.Logger, level slog.Level, keyAttr, key, msg string) bool {
	return l.Allow(key, func(suppressed, _ int) {
		log.Log(context.Background(), level, msg+" (similar lines suppressed)", keyAttr, key, "suppressed", suppressed, "window", l.window().String())
	})
}

func (l *Limiter) window() time.Duration {
	if l.Window <= 0 {
		return DefaultWindow
	}
	return l.Window
}
