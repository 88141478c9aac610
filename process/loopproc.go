package process

import "context"

// A LoopProcess is what a loop that runs as a process (Loop.RunProc) does
// besides its commands: the process's mail and events reach its state on
// the same goroutine, with no hand-off between the process and the loop.
type LoopProcess interface {
	// Receive handles one message of the process's mailbox.
	Receive(m Message)
	// ReceiveEvent handles one system event (an EXIT of a monitored
	// process, a LINK_DOWN).
	ReceiveEvent(e Event)
	// Flush runs after each round of work (the events, mail and commands
	// that were waiting), before the loop looks for more or waits: what a
	// round's changes owe the world (a batch to send) goes out together.
	Flush()
}

// roundSize bounds the messages and the commands one round of RunProc
// takes, so that neither source starves the other, nor Flush.
const roundSize = 64

// RunProc runs the loop as the body of the goroutine process h, until the
// process is asked to stop (its context ends): one goroutine owns the
// loop's state and the process's, and takes, in each round, the urgent
// commands, the process's events, its mail and the queued commands, then
// calls p.Flush. As with Run, the commands still queued when it returns
// are dropped, and Submit fails from then on. Call it from the function
// given to Node.SpawnFunc.
func (l *Loop) RunProc(h *Proc, p LoopProcess) {
	defer l.shut()
	ctx := h.Context()
	// One wake-up for every source: a command wakes the process as its
	// mail and events do (Proc.Notify), and so does the end of its
	// context, so that the loop parks on a plain receive of one channel
	// (a select over three costs it on every park, the pg path's
	// hottest). Commands submitted before are seen by the first round.
	l.proc.Store(h)
	defer context.AfterFunc(ctx, h.Notify)()
	for {
		if ctx.Err() != nil {
			return
		}
		worked := false
		if l.urgentSet.Load() {
			l.runUrgent()
			worked = true
		}
		// Counted first: a pop from the empty queue, every round's case,
		// returns a zero Event (72 bytes) through two calls.
		for h.PendingEvents() > 0 {
			e, ok := h.TryEvent()
			if !ok {
				break
			}
			p.ReceiveEvent(e)
			worked = true
		}
		for range roundSize {
			m, ok := h.TryReceive()
			if !ok {
				break
			}
			p.Receive(m)
			worked = true
		}
		ran, done := l.drain(ctx, roundSize)
		if done {
			return
		}
		worked = worked || ran
		if worked {
			p.Flush()
			// Go idle at once when nothing came meanwhile, rather than
			// after one more round that would find nothing: its looks at
			// every source were a tenth of a round trip into the loop.
			if l.pending(h) || ctx.Err() != nil {
				continue
			}
		}
		// Going idle: rewind the drained queue (see Run), and arm the wake-up
		// before the last look at every source, the context's end
		// included, so that whoever comes in between (a Submit, a
		// message, an event, the cancel) sees the process armed and
		// signals it. A token left by a wake-up that this look made
		// needless only costs one empty round.
		l.q.rewind()
		h.Arm()
		if l.pending(h) || ctx.Err() != nil {
			h.Disarm()
			continue
		}
		<-h.Wake()
		h.Disarm()
	}
}

// pending reports whether a command, urgent work, a message or an event
// waits for the loop run by RunProc as h.
func (l *Loop) pending(h *Proc) bool {
	return l.q.len() > 0 || l.urgentSet.Load() || h.Pending() > 0 || h.PendingEvents() > 0
}
