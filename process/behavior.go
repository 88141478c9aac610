package process

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Behavior is a process driven by its messages: Receive is called once per
// message, one at a time, on a goroutine that exists only while the
// process has mail.
type Behavior interface {
	Receive(c Context, m Message)
}

// Initializer is implemented by a Behavior that must run code before its
// first message. An error from Init is the process's exit reason.
type Initializer interface {
	Init(c Context) error
}

// EventReceiver is implemented by a Behavior that wants system events
// (EXIT from monitors, LINK_DOWN from trapped links). Others drop them.
type EventReceiver interface {
	ReceiveEvent(c Context, e Event)
}

// Terminator is implemented by a Behavior that must run code when it exits,
// whatever the reason; it runs on the process's goroutine, last.
type Terminator interface {
	Terminate(c Context, e Exit)
}

// Context is what a Behavior gets with every call: its identity and the
// means to end itself.
type Context struct{ p *process }

// Self returns the process's PID.
func (c Context) Self() PID { return c.p.pid }

// Node returns the node the process runs on.
func (c Context) Node() *Node { return c.p.node }

// Stop ends the process after the current call, with result v (err nil) or
// abnormally with err.
func (c Context) Stop(v any, err error) {
	c.p.mu.Lock()
	x := c.p.extLocked()
	x.exit = Exit{Value: v, Err: err}
	c.p.mu.Unlock()
	c.p.selfStop = true
}

// Reply answers m on behalf of this process (Node.Reply: a reply that
// comes after its ask ended is a dead letter).
func (c Context) Reply(m *Message, v any, err error) (bool, error) {
	return c.p.node.Reply(m, c.p.pid, v, err)
}

// spinTurns is how many times an emptied dispatcher yields before it lets
// its goroutine go: a sender that is about to send again (a request/reply
// loop) then finds it still running and no goroutine is started.
const spinTurns = 2

func (p *process) dispatchInit(i Initializer) {
	c := Context{p}
	if exit, ok := p.guard(func() {
		if err := i.Init(c); err != nil {
			c.Stop(nil, fmt.Errorf("init: %w", err))
		}
	}); !ok {
		p.end(exit, nil)
		return
	}
	if p.selfStop {
		p.end(p.ext.Load().exit, nil)
		return
	}
	p.dispatch()
}

// States of a Behavior's dispatcher (process.sched).
const (
	schedIdle    int32 = iota // no dispatcher: a sender starts one
	schedRunning              // a dispatcher runs the Behavior
	// schedLooking: the dispatcher has handled everything and yields
	// before it looks again (spinTurns). A sender need start nothing, as
	// for schedRunning; but the process is idle (Node.Idle), as Akka's
	// actor is once its receive has returned: a router that counts busy
	// routees must not count one that waits in the run queue to look for
	// mail. On a loaded machine that wait lasted milliseconds, and a pool
	// with one closed-loop client saw every routee busy.
	schedLooking
)

// whileLooking, set only by tests, runs in a dispatcher that has set
// schedLooking, before it yields (see TestLookingProcessIsIdle).
var whileLooking func(PID)

// dispatch runs the Behavior until its mailbox and event queue are empty.
func (p *process) dispatch() {
	c := Context{p}
	idle := 0
	var held *meta // the message a Receive that ended the process was handling
	for {
		if p.dead.Load() {
			// Ended from outside: killed (a stop request would have been
			// seen below; Kill records nothing for a Behavior that never
			// needed an extension, see exitOf).
			p.settleOnExit(p.exitOf(Exit{Err: ErrKilled}), held)
			return
		}
		if p.stopReq.Load() {
			p.end(p.exitReason(Exit{}), held)
			return
		}
		worked := false
		if x := p.ext.Load(); x != nil && x.events.len() > 0 {
			if exit, ok := p.guard(func() { p.drainEvents(c) }); !ok {
				p.end(exit, nil)
				return
			}
			worked = true
		}
		{
			var n int
			var exit Exit
			var ok bool
			n, held, exit, ok = p.receiveBatch(c)
			if !ok {
				p.end(exit, held)
				return
			}
			if p.selfStop {
				p.end(p.ext.Load().exit, held)
				return
			}
			worked = worked || n > 0
		}
		if worked {
			idle = 0
			continue
		}
		if idle < spinTurns {
			idle++
			p.sched.Store(schedLooking)
			if whileLooking != nil {
				whileLooking(p.pid)
			}
			runtime.Gosched()
			p.sched.Store(schedRunning)
			continue
		}
		p.trimQueues()
		p.sched.Store(schedIdle)
		// A sender that saw the dispatcher running did not start a
		// goroutine: look again.
		if p.mb.len() == 0 && (p.ext.Load() == nil || p.ext.Load().events.len() == 0) && !p.stopReq.Load() {
			return
		}
		if !p.sched.CompareAndSwap(schedIdle, schedRunning) {
			return
		}
	}
}

// receiveBatch hands queued messages to Receive until the mailbox is empty
// or the process must stop. One deferred recover covers the whole batch.
// held is the message whose Receive panicked or ended the process: an ask
// it did not answer fails as the process ends (settle.go).
func (p *process) receiveBatch(c Context) (n int, held *meta, exit Exit, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			p.node.log.Error("process panicked", "pid", p.pid.String(), "panic", r, "stack", string(debug.Stack()))
			exit, ok = Exit{Err: fmt.Errorf("panic: %v", r)}, false
		}
	}()
	b := p.behavior
	// m is the message handed to Receive (a copy: it cannot change m).
	// Successive tells of one sender share their meta, so only the
	// payload changes from one to the next: m keeps the rest, and the
	// 72-byte copy into Receive's arguments reads words stored long
	// before, not ones just stored (a fresh Message built for each
	// message made the copy wait on them: a third of the receiver's time).
	// The payload's two words are still stored just before the copy reads
	// them as one, which the store buffer cannot forward: that stall is
	// what is left of it (perf annotate).
	var m Message
	var last *meta
	for {
		e, more := p.mb.popPaced()
		if !more {
			return n, nil, Exit{}, true
		}
		n++
		held = e.meta
		if !p.owned || !runCommand(e) {
			if e.meta != last {
				m, last = e.open(), e.meta
			} else {
				m.Payload = e.payload
			}
			b.Receive(c, m)
		}
		if p.selfStop || p.stopReq.Load() || p.dead.Load() {
			return n, held, Exit{}, true
		}
	}
}

func (p *process) drainEvents(c Context) {
	er, _ := p.behavior.(EventReceiver)
	for {
		e, ok := p.ext.Load().events.pop()
		if !ok {
			return
		}
		if er != nil {
			er.ReceiveEvent(c, e)
		}
	}
}

// guard runs f, turning a panic into an abnormal exit.
func (p *process) guard(f func()) (exit Exit, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			p.node.log.Error("process panicked", "pid", p.pid.String(), "panic", r, "stack", string(debug.Stack()))
			exit, ok = Exit{Err: fmt.Errorf("panic: %v", r)}, false
		}
	}()
	f()
	return Exit{}, true
}

// end finishes a Behavior, running its Terminator first, and fails the
// asks it will never answer, held (the message it was handling) among them.
func (p *process) end(e Exit, held *meta) {
	if t, ok := p.behavior.(Terminator); ok {
		p.guard(func() { t.Terminate(Context{p}, e) })
	}
	p.finish(e)
	p.settleOnExit(p.exitOf(e), held)
}
