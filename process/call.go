package process

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/value"
)

// Owner is the one goroutine that owns some state, as its callers see it:
// it takes commands from any goroutine and runs them in order. A Loop is
// an Owner; a process becomes one with Context.Owner or Proc.Owner.
type Owner interface {
	// Submit queues fn to run on the owner. An error means fn will not
	// run: ErrQueueFull, or ErrLoopStopped once the owner has stopped.
	Submit(fn func()) error
	// Done is closed once the owner runs no more commands.
	Done() <-chan struct{}
}

// UrgentOwner is an Owner with a second lane that no queue limit refuses:
// what must not be lost when the queue is full (a member's exit, a closed
// subscription) runs before the next queued command.
type UrgentOwner interface {
	Owner
	SubmitUrgent(fn func()) error
}

// A Command is the work of a call (RunOn). A hot path passes a pooled struct with
// its arguments instead of a closure, so that a call allocates nothing; such
// a command may put itself back in its pool at the end of Run: the call
// never touches it once Run has returned.
type Command interface {
	Run() error
}

// CommandFunc adapts a function to a Command.
type CommandFunc func() error

// Run calls f.
func (f CommandFunc) Run() error { return f() }

// CallOptions configure a call (RunOn). The zero value waits as long as the
// caller's context allows, in the owner's ordinary queue.
type CallOptions struct {
	// Timeout bounds the wait; past it RunOn returns ErrCallTimeout. Zero
	// means no deadline.
	Timeout time.Duration
	// Urgent submits through the owner's urgent lane, which its queue
	// limit never refuses. The owner must be an UrgentOwner.
	Urgent bool
}

// ErrCallTimeout: a call's command did not run within its timeout.
var ErrCallTimeout = value.Sentinel("process.call_timeout", value.KindTimeout, "call timed out")

// errNotUrgent: CallOptions.Urgent with an owner that has no urgent lane,
// a programming error.
var errNotUrgent = value.NewError(value.KindInvalid, "call: the owner has no urgent lane")

// RunOn runs cmd on o and waits for it: the one way to run something on the
// goroutine that owns an entry's state and wait for the result. It returns cmd's own error, or:
//   - what Submit returned, at once, when o refused the command (ErrQueueFull,
//     ErrLoopStopped);
//   - ErrLoopStopped when o stopped before running it;
//   - ErrCallTimeout when opts.Timeout passed first;
//   - an error matching both ErrCallAbandoned and ctx's cause when ctx ended
//     first (a process asked to stop while it waits).
//
// After a timeout or an abandon the command may still run later: the caller
// stopped waiting, nothing more. Waiters are pooled and carry their own
// timer, so a call with a Command that is not a closure allocates nothing.
func RunOn(ctx context.Context, o Owner, cmd Command, opts CallOptions) error {
	ran, err := runOn(ctx, o, cmd, opts)
	if err != nil {
		return err
	}
	return ran
}

// CallErrors are a kind's own errors for the ways a call on its owner can
// fail (RunOnAs), so every kind maps them the same way. A nil error keeps
// this package's sentinel.
type CallErrors struct {
	// What names the caller in every such error ("pool app:p"); Op, when
	// set, the operation after it ("pg scope app:pg: join"). Both empty:
	// no prefix.
	What, Op string
	// Stopped replaces ErrLoopStopped: the owner stopped before it ran
	// the command (or refused it, stopped).
	Stopped error
	// Timeout replaces ErrCallTimeout; the error names the timeout.
	Timeout error
	// Abandoned replaces ErrCallAbandoned; the error wraps ctx's cause
	// either way, so errors.Is(err, ctx.Err()) holds.
	Abandoned error
}

// RunOnAs is RunOn for a kind's API, the one place where what went wrong
// with a call becomes the kind's error: cmd's own error comes back as it
// is; a call that failed comes back as errs says (a stopped owner, a
// timeout, an abandoned wait), or with RunOn's error (a full queue), each
// prefixed with errs.What and errs.Op. It allocates nothing more than
// RunOn when the call succeeds.
func RunOnAs(ctx context.Context, o Owner, cmd Command, opts CallOptions, errs CallErrors) error {
	ran, err := runOn(ctx, o, cmd, opts)
	if err != nil {
		return errs.wrap(ctx, err, opts.Timeout)
	}
	return ran
}

// wrap turns err, a call's own failure, into the caller's error.
func (e *CallErrors) wrap(ctx context.Context, err error, timeout time.Duration) error {
	switch {
	case errors.Is(err, ErrLoopStopped):
		if e.Stopped != nil {
			err = e.Stopped
		}
	case errors.Is(err, ErrCallTimeout):
		t := e.Timeout
		if t == nil {
			t = ErrCallTimeout
		}
		err = fmt.Errorf("%w after %s", t, timeout)
	case errors.Is(err, ErrCallAbandoned):
		if e.Abandoned != nil {
			err = fmt.Errorf("%w: %w", e.Abandoned, context.Cause(ctx))
		}
	}
	switch {
	case e.What != "" && e.Op != "":
		return fmt.Errorf("%s: %s: %w", e.What, e.Op, err)
	case e.What != "":
		return fmt.Errorf("%s: %w", e.What, err)
	case e.Op != "":
		return fmt.Errorf("%s: %w", e.Op, err)
	}
	return err
}

// runOn is RunOn with the command's own error (ran) apart from the call's
// (err), which only RunOnAs maps.
func runOn(ctx context.Context, o Owner, cmd Command, opts CallOptions) (ran, err error) {
	w := waiters.Get().(*waiter)
	w.cmd = cmd
	// The call's deadline is in its state before anything can settle it.
	var now, deadline int64
	if opts.Timeout > 0 {
		now = int64(time.Since(epoch))
		deadline = now + int64(min(opts.Timeout, time.Duration(maxCallDeadline-now)))
	}
	w.state.Store(uint64(deadline) << 2) // and the status waitPending (0)
	// A loop settles every call it does not run.
	lo, settles := o.(*Loop)
	switch {
	case settles:
		err = lo.submitCall(w, opts.Urgent)
	case opts.Urgent:
		uo, ok := o.(UrgentOwner)
		if !ok {
			w.release()
			return nil, errNotUrgent
		}
		err = uo.SubmitUrgent(w.runFn)
	default:
		err = o.Submit(w.runFn)
	}
	if err != nil {
		w.release()
		return nil, err
	}
	w.arm(deadline, now)
	var gone error // why the caller stops waiting, if it does
	cancelled := ctx.Done()
	switch {
	case settles && cancelled == nil:
		// The plainest wait of all: one channel, nothing else to watch.
		<-w.done
	case settles:
		select {
		case <-w.done:
		case <-cancelled:
			gone = fmt.Errorf("%w: %w", ErrCallAbandoned, context.Cause(ctx))
		}
	case cancelled == nil:
		// context.Background(): the two-case select is the cheaper one.
		select {
		case <-w.done:
		case <-o.Done():
			gone = stoppedError(o)
		}
	default:
		select {
		case <-w.done:
		case <-o.Done():
			gone = stoppedError(o)
		case <-cancelled:
			gone = fmt.Errorf("%w: %w", ErrCallAbandoned, context.Cause(ctx))
		}
	}
	if gone != nil {
		if w.settle(waitGone) {
			// The command may still run; the waiter is left to it, never
			// reused, so its late completion touches nobody. Its timer
			// has nothing more to time.
			w.timer.mu.Lock()
			w.timer.stop()
			w.timer.mu.Unlock()
			return nil, gone
		}
		<-w.done // settled meanwhile, by the command, the clock or the stop
	}
	switch w.state.Load() & waitMask {
	case waitDone:
		ran = w.err
		w.release()
		return ran, nil
	case waitStopped:
		// The loop dropped the command: nobody holds the waiter but its
		// timer, whose expiry finds the call settled.
		w.release()
		return nil, stoppedError(o)
	}
	return nil, ErrCallTimeout // the waiter stays with the command, as above
}

// waiter is one call's rendezvous between the caller and the owner.
//
// Its timer is not set and stopped per call, which was a large part of a
// round trip's cost: it stays armed across the calls that reuse the
// waiter, and each call only writes its deadline into its state. When the
// timer fires, expire times out the call in progress if its deadline has
// passed, and otherwise sets the timer again for that deadline; with no
// call in progress the timer stays unset until the next call with a
// deadline. A settled call's state no longer matches any CAS, so a late
// expiry can strike only a call whose own deadline has passed. A call with
// a deadline more than farArm away stops the timer as it ends (release),
// so a waiter the pool lets go is not held by its timer for decades.
type waiter struct {
	done  chan struct{} // capacity 1: whoever settles the call sends once
	state atomic.Uint64 // the call's deadline (since epoch; 0: none) << 2 | its status
	err   error
	cmd   Command
	runFn func() // w.run, bound once: a method value per Submit would allocate

	timer keptTimer // fires expire
}

// A call's status, the low bits of waiter.state.
const (
	waitPending uint64 = iota
	waitDone           // the command ran
	waitGone           // the caller stopped waiting (timeout, stop, ctx)
	waitStopped        // the owner stopped and dropped the command (a Loop)
	waitMask    = 3

	maxCallDeadline = 1 << 61 // the farthest deadline state holds: 73 years
)

var waiters = sync.Pool{New: func() any {
	w := &waiter{done: make(chan struct{}, 1)}
	// The deadline settles the call from the timer's goroutine, so the
	// caller waits on w.done alone instead of a select with a timer
	// channel, a large part of a round trip's cost.
	initKeptTimer(&w.timer, w, (*waiter).expire)
	w.runFn = w.run
	w.state.Store(waitDone)
	return w
}}

// settle ends the pending call as to says; false when it was settled
// already. Whoever settles it for a caller that waits wakes it (w.done).
func (w *waiter) settle(to uint64) bool {
	for {
		s := w.state.Load()
		if s&waitMask != waitPending {
			return false
		}
		if w.state.CompareAndSwap(s, s|to) {
			return true
		}
	}
}

// run is what the owner executes.
func (w *waiter) run() {
	w.err = w.cmd.Run()
	if w.settle(waitDone) {
		w.done <- struct{}{}
	}
}

// stop fails the call of a command its Loop dropped as it stopped.
func (w *waiter) stop() {
	if w.settle(waitStopped) {
		w.done <- struct{}{}
	}
}

// arm makes sure the timer fires by deadline (0: the call has none).
func (w *waiter) arm(deadline, now int64) {
	if deadline == 0 {
		return
	}
	w.timer.markFar(deadline, now)
	w.timer.mu.Lock()
	w.timer.setBy(deadline, now)
	w.timer.mu.Unlock()
}

// expire runs when the timer fires: it times out the call in progress
// once its deadline has passed, or sets the timer for that deadline.
func (w *waiter) expire() {
	w.timer.mu.Lock()
	defer w.timer.mu.Unlock()
	w.timer.armed = false
	for {
		s := w.state.Load()
		deadline := int64(s >> 2)
		if s&waitMask != waitPending || deadline == 0 {
			return // nothing to time until the next call arms the timer
		}
		if now := int64(time.Since(epoch)); now < deadline {
			w.timer.setBy(deadline, now)
			return
		}
		if w.state.CompareAndSwap(s, s|waitGone) {
			w.done <- struct{}{}
			return
		}
		// Settled meanwhile, or another call began: look again.
	}
}

// release returns a settled (or never submitted) waiter to the pool,
// holding nothing of its call.
func (w *waiter) release() {
	w.state.Store(waitDone) // a free waiter has no call for expire to strike
	w.timer.releaseFar()
	w.err, w.cmd = nil, nil
	waiters.Put(w)
}
