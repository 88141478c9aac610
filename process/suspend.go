package process

import "errors"

// A goroutine process that waits holds a goroutine, and the goroutine's
// stack holds whatever its function was in the middle of: a few kilobytes
// each, a gigabyte or more for a million idle processes. A process whose
// function can stop and go on later (the Lua host, whose VM keeps its own
// call stack) suspends instead: it hands the core the function that goes on
// and returns, and its goroutine is free for other runs. The next wake-up
// — a message, an event, Notify, a stop request, a Kill — runs that
// function on a worker (workers.go). Between the two, the process is only
// its state.

// States of a goroutine process's wait (process.wait).
const (
	waitRunning    int32 = iota // running: wake-ups need do nothing
	waitArmed                   // parked on its Wake channel (Arm)
	waitSuspending              // about to suspend (Suspend): a wake-up is noted, Commit fails
	waitSuspended               // suspended (Commit): a wake-up starts procExt.cont
	waitLooking                 // running, yielding before it looks for work again (Looking)
)

// Looking declares that the process, which has finished what it was doing,
// yields before it looks for its next work (a spin before it suspends or
// parks, to catch a wake-up on its way). A wake-up needs do nothing, as for
// a running process; but the process counts as idle (Node.Idle) unless it
// is Busy, as it would once suspended: a router must not count a routee
// that waits in the run queue to look for mail as one handling a message.
// Disarm ends it (as Suspend and Arm do). Only the process's own goroutine
// may call it.
func (h *Proc) Looking() { h.p.wait.Store(waitLooking) }

// ErrSuspended is what a goroutine process's function returns after a
// Commit that succeeded: it has not ended, it goes on in the function it
// suspended with. Returning it otherwise leaves the process waiting for
// good.
var ErrSuspended = errors.New("process: suspended")

// Suspend prepares to suspend the process: fn is to run on a worker
// (workers.go) at the process's next wake-up (a message, an event, Notify, a stop
// request), instead of a goroutine waiting for it. Like Arm, it comes
// before the last look for work; a wake-up that comes from now on is
// noted. When the look finds work, Reclaim withdraws Suspend; otherwise
// Commit suspends the process, and its function returns ErrSuspended at
// once. What fn returns is the process's exit, unless fn suspends in
// turn. Only the process's own goroutine may call these.
//
//	h.Suspend(goOn)
//	if h.Pending() > 0 {
//		h.Reclaim()
//		return goOn(h) // or carry on here
//	}
//	if !h.Commit() {
//		return goOn(h) // woken meanwhile
//	}
//	return nil, process.ErrSuspended
func (h *Proc) Suspend(fn ProcFunc) {
	// About to wait: hand back emptied queue buffers first, as Arm does.
	h.p.trimQueues()
	h.p.ext.Load().cont = fn
	h.p.wait.Store(waitSuspending)
}

// Commit suspends the process that Suspend prepared. It reports false when
// a wake-up came since Suspend: the process carries on instead. Until
// Commit, nothing runs the suspended function, so the look for work
// between the two may touch anything the process owns.
func (h *Proc) Commit() bool {
	if h.p.wait.CompareAndSwap(waitSuspending, waitSuspended) {
		return true
	}
	h.p.ext.Load().cont = nil
	return false
}

// Reclaim withdraws Suspend, when the process found work after all.
func (h *Proc) Reclaim() {
	h.p.wait.Store(waitRunning)
	h.p.ext.Load().cont = nil
}
