package process

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
	for {
		if ctx.Err() != nil {
			return
		}
		worked := false
		if l.urgentSet.Load() {
			l.runUrgent()
			worked = true
		}
		for e, ok := h.TryEvent(); ok; e, ok = h.TryEvent() {
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
			continue
		}
		// Going idle: give back the drained chunks, and arm both
		// wake-ups before the last look, so that a sender who comes in
		// between sees the loop waiting.
		l.q.trim()
		l.waiting.Store(true)
		h.Arm()
		if l.q.len() > 0 || l.urgentSet.Load() || h.Pending() > 0 || h.PendingEvents() > 0 {
			l.waiting.Store(false)
			h.Disarm()
			continue
		}
		select {
		case <-l.wake:
		case <-h.Wake():
		case <-ctx.Done():
		}
		l.waiting.Store(false)
		h.Disarm()
	}
}
