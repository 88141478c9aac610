package process

import "errors"

// A goroutine process that waits holds a goroutine, and the goroutine's
// stack holds whatever its function was in the middle of: a few kilobytes
// each, a gigabyte or more for a million idle processes. A process whose
// function can stop and go on later (the Lua host, whose VM keeps its own
// call stack) suspends instead: it hands the core the function that goes on
// and returns, and its goroutine ends. The next wake-up — a message, an
// event, Notify, a stop request, a Kill — starts that function on a new
// goroutine. Between the two, the process is only its state.

// States of a goroutine process's wait (process.wait).
const (
	waitRunning   int32 = iota // running: wake-ups need do nothing
	waitArmed                  // parked on its Wake channel (Arm)
	waitSuspended              // suspended: a wake-up starts procExt.cont (Suspend)
)

// ErrSuspended is what a goroutine process's function returns after
// Suspend: it has not ended, it goes on in the function it suspended with.
// Returning it without a Suspend leaves the process waiting for good.
var ErrSuspended = errors.New("process: suspended")

// Suspend arranges for fn to run on a new goroutine at the process's next
// wake-up (a message, an event, Notify, a stop request), instead of a
// goroutine waiting for it. Like Arm, it comes before the last look for
// work: when that look finds some, Reclaim takes the wake-up back;
// otherwise the function returns ErrSuspended at once. What fn returns is
// the process's exit, unless fn suspends in turn. Only the process's own
// goroutine may call it.
//
//	h.Suspend(goOn)
//	if h.Pending() > 0 && h.Reclaim() {
//		return goOn(h) // or carry on here
//	}
//	return nil, process.ErrSuspended
func (h *Proc) Suspend(fn ProcFunc) {
	// About to wait: hand back an emptied mailbox buffer first, as Arm does.
	h.p.mb.trim()
	h.p.ext.Load().cont = fn
	h.p.wait.Store(waitSuspended)
}

// Reclaim withdraws Suspend, when the process found work after all. It
// reports false when a wake-up came first and started the suspended
// function (it may be running already): the caller must return
// ErrSuspended and touch the process no more.
func (h *Proc) Reclaim() bool {
	if !h.p.wait.CompareAndSwap(waitSuspended, waitRunning) {
		return false
	}
	h.p.ext.Load().cont = nil
	return true
}
