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
	if opts.Urgent {
		uo, ok := o.(UrgentOwner)
		if !ok {
			w.release()
			return nil, errNotUrgent
		}
		err = uo.SubmitUrgent(w.runFn)
	} else {
		err = o.Submit(w.runFn)
	}
	if err != nil {
		w.release()
		return nil, err
	}
	armed := opts.Timeout > 0
	if armed {
		w.timer.Reset(opts.Timeout)
	}
	var gone error // why the caller stops waiting, if it does
	if cancelled := ctx.Done(); cancelled == nil {
		// context.Background(): the two-case select is the cheaper one.
		select {
		case <-w.done:
		case <-o.Done():
			gone = stoppedError(o)
		}
	} else {
		select {
		case <-w.done:
		case <-o.Done():
			gone = stoppedError(o)
		case <-cancelled:
			gone = fmt.Errorf("%w: %w", ErrCallAbandoned, context.Cause(ctx))
		}
	}
	if gone != nil {
		if w.state.CompareAndSwap(waitPending, waitGone) {
			if armed {
				w.timer.Stop()
			}
			// The command may still run; the waiter is left to it, never
			// reused, so its late completion touches nobody.
			return nil, gone
		}
		<-w.done // settled meanwhile, by the command or the clock
	}
	timerStopped := !armed || w.timer.Stop()
	if w.state.Load() == waitGone {
		return nil, ErrCallTimeout // the waiter stays with the command, as above
	}
	ran = w.err
	if timerStopped {
		w.release()
	}
	// Otherwise the timer fired as the answer came: its expire may still be
	// on its way, and would settle the next call that reused this waiter as
	// timed out at once. This waiter is dropped instead.
	return ran, nil
}

// waiter is one call's rendezvous between the caller and the owner.
type waiter struct {
	done  chan struct{} // capacity 1: whoever settles the call sends once
	state atomic.Uint32 // waitPending, then waitDone or waitGone: who settled it
	err   error
	cmd   Command
	timer *time.Timer // fires expire; made once per pooled waiter
	runFn func()      // w.run, bound once: a method value per Submit would allocate
}

const (
	waitPending uint32 = iota
	waitDone           // the command ran
	waitGone           // the caller stopped waiting (timeout, stop, ctx)
)

var waiters = sync.Pool{New: func() any {
	w := &waiter{done: make(chan struct{}, 1)}
	// The deadline settles the call from the timer's goroutine, so the
	// caller waits on w.done alone instead of a select with a timer
	// channel, a large part of a round trip's cost.
	w.timer = time.AfterFunc(time.Hour, w.expire)
	w.timer.Stop()
	w.runFn = w.run
	return w
}}

// run is what the owner executes.
func (w *waiter) run() {
	w.err = w.cmd.Run()
	if w.state.CompareAndSwap(waitPending, waitDone) {
		w.done <- struct{}{}
	}
}

func (w *waiter) expire() {
	if w.state.CompareAndSwap(waitPending, waitGone) {
		w.done <- struct{}{}
	}
}

// release returns a settled (or never submitted) waiter to the pool,
// holding nothing of its call.
func (w *waiter) release() {
	w.state.Store(waitPending)
	w.err, w.cmd = nil, nil
	waiters.Put(w)
}
