package process

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// ProcFunc is the body of a goroutine process. What it returns is the
// process's exit: a nil error is a normal exit with the returned value.
type ProcFunc func(p *Proc) (any, error)

// Proc is the handle a goroutine process uses to receive. Its methods that
// receive may only be called from the process's own goroutine (the one
// running its function, or the function it suspended with, see Suspend);
// Self, Node, Context and Notify may be used anywhere.
type Proc struct{ p *process }

// Self returns the process's PID.
func (h *Proc) Self() PID { return h.p.pid }

// Node returns the node the process runs on.
func (h *Proc) Node() *Node { return h.p.node }

// Context is cancelled when the process is asked to stop (Terminate, a link,
// Kill). Blocking code in the process must select on it.
func (h *Proc) Context() context.Context { return h.p.ext.Load().ctx }

// TryReceive returns the next message without blocking.
func (h *Proc) TryReceive() (Message, bool) {
	e, ok := h.p.pop()
	if !ok {
		return Message{}, false
	}
	return e.open(), true
}

// pop takes the next message from the mailbox of a goroutine process,
// running the commands before it when the process is an Owner.
func (p *process) pop() (envelope, bool) {
	for {
		e, ok := p.mb.pop()
		if !ok || !p.owned || !runCommand(e) {
			return e, ok
		}
	}
}

// TryEvent returns the next system event without blocking.
func (h *Proc) TryEvent() (Event, bool) { return h.p.ext.Load().events.pop() }

// Pending reports how many messages wait in the mailbox.
func (h *Proc) Pending() int { return h.p.mb.len() }

// PendingEvents reports how many system events wait.
func (h *Proc) PendingEvents() int { return h.p.ext.Load().events.len() }

// Wake returns a channel that receives a value after Arm when a message or
// event may have arrived. The pattern for a select over several sources is:
//
//	for {
//		if m, ok := h.TryReceive(); ok { ...; continue }
//		h.Arm()
//		if h.Pending() > 0 || h.PendingEvents() > 0 { h.Disarm(); continue }
//		select { case <-h.Wake(): case <-other: ...; case <-h.Context().Done(): ... }
//	}
//
// Arm before the second look, so a sender that comes in between sees the
// process waiting and signals Wake. The channel exists once the process
// has armed.
func (h *Proc) Wake() <-chan struct{} { return h.p.wake }

// Arm declares that the process is about to wait on Wake.
func (h *Proc) Arm() {
	// About to wait: hand back emptied queue buffers first.
	h.p.trimQueues()
	if h.p.wake == nil {
		// Made before the store that publishes the armed state: a waker
		// reads it only after seeing that state.
		h.p.wake = make(chan struct{}, 1)
	}
	h.p.wait.Store(waitArmed)
}

// Busy says what the process's next waits are for: busy, a timer or a
// reply in the middle of its work (a sleep, an ask); not busy, its next
// mail. A process that parks (Arm) or suspends while busy is not Idle, so a
// router does not take it for a routee that has finished what it accepted
// and retire it mid-work. The setting holds until it is changed; a
// goroutine process starts not busy. Only the process's own goroutine may
// call it.
func (h *Proc) Busy(busy bool) {
	x := h.p.ext.Load()
	if x.busy.Load() != busy {
		x.busy.Store(busy)
	}
}

// Disarm withdraws Arm when the process found work after all.
func (h *Proc) Disarm() { h.p.wait.Store(waitRunning) }

// Notify wakes the process if it waits on Wake, as a message does. Code
// that feeds the process through a queue of its own (a Lua host's
// channels, a timer) calls it after queueing, so the process waits on one
// wake-up for every source. Any goroutine may call it.
func (h *Proc) Notify() { h.p.notify() }

// Receive blocks until a message arrives or ctx (or the process's own
// context) is done.
func (h *Proc) Receive(ctx context.Context) (Message, error) {
	own := h.Context()
	for {
		if m, ok := h.TryReceive(); ok {
			return m, nil
		}
		h.Arm()
		if m, ok := h.TryReceive(); ok {
			h.Disarm()
			return m, nil
		}
		select {
		case <-h.Wake():
		case <-ctx.Done():
			h.Disarm()
			return Message{}, ctx.Err()
		case <-own.Done():
			h.Disarm()
			return Message{}, own.Err()
		}
	}
}

// SetTrapLinks changes whether the process traps links.
func (h *Proc) SetTrapLinks(trap bool) {
	h.p.mu.Lock()
	x := h.p.extLocked()
	x.trapLinks = trap || x.system
	h.p.mu.Unlock()
}

// Stopping reports whether the process was asked to stop.
func (h *Proc) Stopping() bool { return h.p.stopReq.Load() }

// runFunc runs fn, the process's function or what it suspended with, and
// ends the process with what it returns, unless it suspended again.
func (p *process) runFunc(fn ProcFunc) {
	// The process's one handle, not a new one per run: a run starts at
	// every wake-up of a suspended process, and &Proc{p} escaped to the
	// heap each time (8 B, one allocation per start).
	h := &p.ext.Load().self
	var e Exit
	suspended := false
	// goexit stays set when fn neither returns nor panics: it called
	// runtime.Goexit. The process ends all the same (it stayed in the
	// process table for good, its links and monitors never told), and the
	// goroutine ends with it: a worker is not pending, so the pool does
	// not miss it.
	goexit := true
	defer func() {
		if goexit {
			p.node.log.Error("process called runtime.Goexit", "pid", p.pid.String())
			p.endRun(Exit{Err: errGoexit})
		}
	}()
	func() {
		defer func() {
			if r := recover(); r != nil {
				goexit = false
				p.node.log.Error("process panicked", "pid", p.pid.String(), "panic", r, "stack", string(debug.Stack()))
				e = Exit{Err: fmt.Errorf("panic: %v", r)}
			}
		}()
		v, err := fn(h)
		goexit = false
		if err == ErrSuspended {
			// fn goes on at the next wake-up, perhaps already.
			suspended = true
			return
		}
		e = Exit{Value: v, Err: err}
	}()
	if suspended {
		return
	}
	p.endRun(e)
}

// errGoexit is the exit reason of a process whose function called
// runtime.Goexit.
var errGoexit = errors.New("the process's function called runtime.Goexit")

// endRun ends the process with e, what its function's last run returned.
func (p *process) endRun(e Exit) {
	p.node.returned(p, &p.ext.Load().run)
	e = p.exitReason(e)
	p.finish(e)
	p.settleOnExit(p.exitOf(e), nil)
}
