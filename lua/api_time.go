package lua

import (
	"fmt"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
)

// timeModule is the global time.
var timeModule = Module{
	Name: "time",
	Doc:  "The clock, sleeping and timers.",
	Funcs: []Func{
		{Name: "now", Fn: timeNow, Doc: "Milliseconds since the Unix epoch, with a fraction.", Results: "number"},
		{Name: "sleep", Fn: timeSleep, Doc: "Waits a duration (ms or a string like \"250ms\").",
			Params: "duration: duration", Results: "true|nil, error?"},
		{Name: "after", Fn: timeAfter, Doc: "A channel that receives time.now() once the duration has passed.",
			Params: "duration: duration", Results: "channel|nil, error?"},
	},
}

func nowMillis() lua.LNumber {
	return lua.LNumber(float64(time.Now().UnixMicro()) / 1000)
}

func timeNow(L *lua.LState) int {
	L.Push(nowMillis())
	return 1
}

// timeSleep waits d; it returns true, or nil, err when the process is
// asked to stop meanwhile. In the process's main call the wait suspends
// the process (suspend.go); its deadline is kept in p.slept for the call
// that goes on.
func timeSleep(L *lua.LState) int {
	p := ProcessOf(L)
	d := CheckDuration(L, 1)
	if w := p.slept; (w != nil && w.active) || p.canSuspend(L) {
		if w == nil {
			w = &deadlineWait{}
			p.slept = w
		}
		if !w.active {
			// The alarm is set only if the sleep suspends (drive).
			w.at, w.active = time.Now().Add(d), true
		}
		for {
			if w.ready() {
				w.active = false
				L.Push(lua.LTrue)
				return 1
			}
			if p.stopRequested() {
				w.active = false
				return ReturnError(L, errStopping)
			}
			if ret, done := p.suspendOn(L, w); done {
				return ret
			}
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		L.Push(lua.LTrue)
		return 1
	case <-p.proc.Context().Done():
		return ReturnError(L, errStopping)
	}
}

// afterTimer is a pending time.after; the process stops the ones still
// pending when it exits, so a long timer does not outlive it.
type afterTimer struct {
	t     *time.Timer
	fired atomic.Bool
}

func timeAfter(L *lua.LState) int {
	p := ProcessOf(L)
	d := CheckDuration(L, 1)
	if err := p.lazy().timers.room(p.host.limits.maxTimers); err != nil {
		return ReturnError(L, err)
	}
	c := p.NewChannel(1)
	c.conv = func(_ *lua.LState, v any) lua.LValue { return v.(lua.LNumber) }
	at := &afterTimer{}
	at.t = time.AfterFunc(d, func() {
		at.fired.Store(true)
		c.Offer(nowMillis())
	})
	p.more.timers.add(at)
	L.Push(c.Value(L))
	return 1
}

// timerList holds a process's pending time.after timers. Fired ones are
// swept out when the list has doubled since the last sweep, so a script
// that keeps many long timers pending (a deadline per message in a select
// loop) pays a constant amortised cost per timer, not a scan of all of
// them on every call.
type timerList struct {
	list  []*afterTimer
	sweep int // sweep when list reaches this length (0: minSweep)
}

const minSweep = 64

func (l *timerList) add(at *afterTimer) {
	if len(l.list) >= max(l.sweep, minSweep) {
		l.sweepFired()
	}
	l.list = append(l.list, at)
}

func (l *timerList) sweepFired() {
	live := l.list[:0]
	for _, t := range l.list {
		if !t.fired.Load() {
			live = append(live, t)
		}
	}
	clear(l.list[len(live):])
	l.list = live
	l.sweep = 2 * len(live)
}

// room returns a limit error when limit timers are pending. Only a list at
// the limit is swept here: below it, add's amortised sweep suffices.
func (l *timerList) room(limit int) error {
	if len(l.list) < limit {
		return nil
	}
	l.sweepFired()
	if len(l.list) < limit {
		return nil
	}
	return fmt.Errorf("time.after: %w: a process may have at most %d timers pending", process.ErrProcessLimit, limit)
}

func (p *Process) stopTimers() {
	if p.more != nil {
		for _, t := range p.more.timers.list {
			t.t.Stop()
		}
		p.more.timers = timerList{}
	}
	p.stopAlarm()
}
