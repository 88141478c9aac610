package lua

import (
	"sync"
	"time"

	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/value"
)

// Every crash is visible, in the spirit of OTP's crash reports: a Lua
// process whose script ends with an error it did not catch (it raised,
// its init failed, it returned what cannot be copied) is logged at error
// level with its entry, its PID, the error as "kind: message", where the
// error was raised and the Lua traceback, whoever started it: the runtime,
// a supervisor, a pool or a script. A process that was asked to stop
// (terminated, killed, taken down by a link, restarted by its supervisor
// or a reload) did not crash, nor did one that returned. So that a crash
// loop cannot flood the log, each entry gets at most Burst reports per
// Window; the others are counted, and their number is logged once the
// window ends.

// Defaults of CrashReportLimit.
const (
	DefaultCrashBurst  = 5
	DefaultCrashWindow = 10 * time.Second
)

// CrashReportLimit bounds the crash reports of one entry. Zero fields take
// the defaults.
type CrashReportLimit struct {
	Burst  int
	Window time.Duration
}

func (l CrashReportLimit) withDefaults() CrashReportLimit {
	if l.Burst <= 0 {
		l.Burst = DefaultCrashBurst
	}
	if l.Window <= 0 {
		l.Window = DefaultCrashWindow
	}
	return l
}

// failure is what a crash report tells of the error a script raised: where
// it was raised (an error value carries no position) and the traceback.
type failure struct {
	where string // "main.lua:12", "" when unknown or in the message
	trace string
}

// crashLog rate-limits crash reports per entry (the runtime's one log
// rate limiter, logging.Limiter).
type crashLog struct {
	limit   CrashReportLimit
	once    sync.Once
	limiter logging.Limiter
}

// report logs that p ended with err, unless its entry is past its limit.
func (c *crashLog) report(p *Process, err error) {
	if !c.allow(p) {
		return
	}
	// The report shows at most value.MaxShownError of the error (with its
	// total size): a script's error may be of any size.
	ve := value.FromError(err)
	attrs := []any{"error", string(ve.Kind) + ": " + value.ClipError(ve)}
	if f := p.failed; f != nil {
		if f.where != "" {
			attrs = append(attrs, "location", f.where)
		}
		if f.trace != "" {
			attrs = append(attrs, "traceback", f.trace)
		}
	}
	p.Logger().Error("process crashed", attrs...)
}

// allow counts one crash of p's entry and reports whether it is logged.
// The first one suppressed in a window has their number logged at the
// window's end.
func (c *crashLog) allow(p *Process) bool {
	c.once.Do(func() {
		c.limiter.Burst, c.limiter.Window = c.limit.Burst, c.limit.Window
	})
	id := p.entry.ID
	log := p.env.Logger
	if log == nil {
		log = discardLogger
	}
	return c.limiter.Allow(string(id), func(suppressed, logged int) {
		log.Error("crash reports suppressed", "entry", string(id), "suppressed", suppressed, "logged", logged, "window", c.limit.Window.String())
	})
}
