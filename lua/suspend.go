package lua

import (
	"runtime"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
)

// A Lua process holds a goroutine only while it runs. Its method runs as a
// suspendable call (third_party/gopher-lua/suspend.go): a builtin that must
// wait — a receive or select on the inbox, a listen or event channel or a
// timer, an ask, a sleep — suspends it instead of blocking, the VM unwinds,
// and the process's goroutine ends (process.Proc.Suspend). The next wake-up
// (mail, an event, a channel fed from Go, a reply, the process's timer, a
// stop request) starts a goroutine that continues the call: the builtin is
// called again with the same arguments and looks again. An idle process is
// then only its state: no goroutine, no stack. This is the M:N model of
// Erlang and of Wippy, on Go's scheduler: many processes, as many
// goroutines as are running.
//
// Where a builtin cannot suspend — under a pcall, in a coroutine, in a
// callback called from Go, in a script's top level or init — it blocks its
// goroutine as before (park): the same results, only the goroutine is held
// while it waits.

// A waiter is what a suspended builtin waits for: ready reports whether
// calling it again may find its wait over. It is looked at after the
// process armed its wake-up, so a change that comes later wakes it.
type waiter interface {
	ready() bool
}

// wait ends a look of a builtin that found nothing, waiting for w: done
// means the builtin returns ret (it suspended, or the process must stop:
// nil, err); otherwise w may be ready and the builtin looks again. In the
// process's main call it suspends the call (suspendOn); elsewhere it
// parks the goroutine.
func (p *Process) wait(L *lua.LState, w waiter) (ret int, done bool) {
	if p.stopRequested() {
		return ReturnError(L, errStopping), true
	}
	if p.canSuspend(L) {
		return p.suspendOn(L, w)
	}
	p.proc.Busy(!waitsForMail(w))
	if err := p.park(w.ready); err != nil {
		return ReturnError(L, err), true
	}
	return 0, false
}

// canSuspend reports whether the builtin running on L may suspend the
// process's main call.
func (p *Process) canSuspend(L *lua.LState) bool { return L == p.L && L.CanSuspend() }

// spinTurns is how many times a builtin about to suspend yields first, to
// catch a wake-up that is on its way (the reply of an ask, the next
// message of a request/reply loop) without ending its goroutine and
// starting another; the process core's Behaviors do the same.
const spinTurns = 2

// suspendOn suspends the main call until w may be ready, after a short
// spin (not at the process's first wait): done is false when w became
// ready meanwhile (look again), true with the builtin's return when it
// suspended.
func (p *Process) suspendOn(L *lua.LState, w waiter) (ret int, done bool) {
	// Busy first: while it yields it is idle unless its wait is for
	// something other than mail (see process.Proc.Looking).
	p.proc.Busy(!waitsForMail(w))
	// Not at a process's first wait: nothing it asked for can be on its
	// way yet, and a host that spawns many processes that wait paid two
	// trips through the scheduler for each (a seventh of the CPU of a
	// million spawns).
	turns := spinTurns
	if !p.waited {
		p.waited, turns = true, 0
	}
	for i := 0; i < turns; i++ {
		p.proc.Looking()
		runtime.Gosched()
		p.proc.Disarm()
		if w.ready() {
			return 0, false
		}
	}
	p.waiting = w
	return L.Suspend(), true
}

// waitsForMail reports whether w waits for the process's mail — its inbox
// or a listen channel, alone or among a select's cases — rather than for a
// timer, a reply, events or a channel fed otherwise. A process that waits
// for mail is idle; one that waits for anything else is in the middle of
// its work (process.Proc.Busy), and a router must not retire it then.
func waitsForMail(w waiter) bool {
	mail := func(c *Channel) bool { return c.kind == chanInbox || c.kind == chanListen }
	switch w := w.(type) {
	case *Channel:
		return mail(w)
	case *selectWait:
		for _, sc := range w.cases {
			if !sc.send && mail(sc.ch) {
				return true
			}
		}
	}
	return false
}

// stopRequested reports whether the process has been asked to stop.
// (Err, not Done: the context makes its Done channel on first use, and
// most processes never block on it.)
func (p *Process) stopRequested() bool { return p.ctx.Err() != nil }

// drive runs the process's script from step (its start, or its main call
// going on) until it ends or suspends. A suspended process holds no
// goroutine: drive returns process.ErrSuspended, and the next wake-up
// calls goOn, which drives on. When the script ends, drive tears the
// process down and returns its exit.
func (p *Process) drive(step func() (suspended bool, v any, err error)) (v any, err error) {
	ended := true
	defer func() {
		if ended {
			v, err = p.exit(v, err)
		}
	}()
	for {
		var suspended bool
		suspended, v, err = step()
		if !suspended {
			return v, err
		}
		if p.upgradeCall != nil {
			// process.upgrade unwound the old code's call.
			step = p.upgradeStep
			continue
		}
		p.settleUpgrade(nil) // the new code waits: upgraded
		step = p.continueMain
		// The VM has unwound: only now may a wake-up start the call
		// going on, on another goroutine, once Commit has succeeded.
		w := p.waiting
		p.proc.Suspend(p.goOn)
		if t, ok := w.(timedWaiter); ok {
			// After Suspend: the alarm's wake-up, however soon, is noted.
			p.armAlarm(t.wakeAt())
		}
		if w.ready() || p.stopRequested() {
			p.proc.Reclaim()
			continue
		}
		// It waits: an idle state keeps only the frames and registers it
		// uses (continueMain restores the rest), before Commit lets a
		// wake-up run it elsewhere.
		p.L.CompactSuspended()
		if !p.proc.Commit() {
			continue // woken meanwhile
		}
		ended = false
		return nil, process.ErrSuspended
	}
}

// goOn is what a suspended process's wake-up runs (process.Proc.Suspend).
func (p *Process) goOn(*process.Proc) (any, error) {
	growStack()
	return p.drive(p.continueMain)
}

// continueMain continues the suspended main call: the builtin that
// suspended it looks again.
func (p *Process) continueMain() (bool, any, error) {
	p.waiting = nil
	suspended, err := p.L.Continue()
	if suspended {
		return true, nil, nil
	}
	v, err := p.mainResult(err)
	return false, v, err
}

// A timedWaiter is a wait with a deadline (an ask, a sleep): a suspended
// process is woken at wakeAt by its alarm.
type timedWaiter interface {
	waiter
	wakeAt() time.Time
}

// alarmTimer is the one timer of a process, made on first use, that wakes
// it at the deadline of a suspended wait. It is set only when a wait
// suspends, not for every wait with a deadline (most asks are answered
// while the asker spins, suspendOn), and never stopped when a wait ends:
// setting and stopping a timer per ask was a tenth of an ask's cost. A
// timer set for an earlier deadline than a new wait's serves that wait
// too: it wakes the process early, the builtin looks again, and the
// suspend sets the timer again, for the wait's own deadline. A wait that
// ended thus costs at most one wake-up of nothing, at its deadline.
type alarmTimer struct {
	t  *time.Timer
	at atomic.Int64 // when t fires, as nanoseconds since alarmEpoch; 0: not set (or fired)
}

// alarmEpoch is the origin of alarmTimer.at: a reading of the monotonic
// clock, so at is a deadline's offset without a clock read.
var alarmEpoch = time.Now()

// armAlarm makes sure the process is woken by t: the timer already fires
// no later, or it is set for t. Called between Suspend and the last look,
// so a wake-up by the timer, however soon, is noted.
func (p *Process) armAlarm(t time.Time) {
	at := max(int64(t.Sub(alarmEpoch)), 1)
	a := p.alarmT
	if a == nil {
		a = &alarmTimer{}
		a.at.Store(at)
		a.t = time.AfterFunc(time.Until(t), func() {
			// Before the wake-up: a process that looks at the timer
			// after its wake-up must see it fired.
			a.at.Store(0)
			p.notify()
		})
		p.alarmT = a
		return
	}
	if cur := a.at.Load(); cur != 0 && cur <= at {
		return // it fires by t: its wake-up comes after this look
	}
	a.at.Store(at)
	a.t.Reset(time.Until(t))
}

// stopAlarm stops the timer for good, as the process ends: a timer left
// set would hold the ended process until it fired.
func (p *Process) stopAlarm() {
	if p.alarmT != nil {
		p.alarmT.t.Stop()
	}
}

// deadlineWait is a suspended time.sleep: its deadline, kept for the call
// that goes on.
type deadlineWait struct {
	at     time.Time
	active bool
}

func (w *deadlineWait) ready() bool { return time.Until(w.at) <= 0 }

func (w *deadlineWait) wakeAt() time.Time { return w.at }

// askWait is a suspended process.ask: its call and deadline, kept for the
// call that goes on.
type askWait struct {
	call     process.Call
	deadline time.Time
	active   bool
	// The replier of the last reply and its PID value (askReturn).
	from  process.PID
	fromV lua.LValue
}

// ready reads the clock only while the ask is not settled; Until reads
// only the monotonic clock (w.deadline carries a reading of it).
func (w *askWait) ready() bool { return w.call.Settled() || time.Until(w.deadline) <= 0 }

func (w *askWait) wakeAt() time.Time { return w.deadline }

// selectWait is a suspended channel.select.
type selectWait struct{ cases []*selectCase }

func (w *selectWait) ready() bool {
	for _, sc := range w.cases {
		if !sc.send && sc.ch.ready() {
			return true
		}
	}
	return false
}
