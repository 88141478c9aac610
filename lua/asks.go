package lua

import (
	"time"

	"github.com/proctor-run/proctor/process"
)

// A process that exits fails the asks it will never answer at once (see
// process.Proc.Unanswered): the core drains its own mailbox, and the host
// hands back what it holds besides, the messages set aside in the inbox
// and listen channels and the asks its script received and has not
// replied to.

// heldAsks are the asks handed to the script. Answered ones are swept out
// when the list has doubled since the last sweep, with those whose ask is
// over anyway, so a script that keeps many asks pending (or drops them
// unanswered) pays a constant amortised cost per ask.
type heldAsks struct {
	list  []*askMessage
	sweep int // sweep when list reaches this length (0: minSweep)
}

func (h *heldAsks) add(m *askMessage) {
	if len(h.list) >= max(h.sweep, minSweep) {
		now := time.Now()
		live := h.list[:0]
		for _, x := range h.list {
			if !x.replied && !askOver(&x.r, now) {
				live = append(live, x)
			}
		}
		clear(h.list[len(live):])
		h.list = live
		h.sweep = 2 * len(live)
	}
	h.list = append(h.list, m)
}

// answered drops m when it is the latest ask handed out, the common case
// of a script that answers each ask as it receives it: the list then stays
// empty and holds no message the script is done with.
func (h *heldAsks) answered(m *askMessage) {
	if n := len(h.list); n > 0 && h.list[n-1] == m {
		h.list[n-1] = nil
		h.list = h.list[:n-1]
	}
}

// askOver reports whether r's asker has stopped waiting: its ask's
// deadline passed by now. A zero now is read from the clock, and only for
// an ask that names a deadline: the monotonic clock alone (Until) when the
// deadline carries a reading of it, as a local ask's does, which costs
// half of time.Now.
func askOver(r *process.Received, now time.Time) bool {
	m := r.Message()
	d, ok := m.Deadline()
	if !ok {
		return false
	}
	if now.IsZero() {
		return time.Until(d) < 0
	}
	return d.Before(now)
}

// dropExpired reports whether r is an ask whose asker has stopped waiting,
// and if so reports it as a dead letter (DeadExpired): the mailbox drops
// it instead of handing it to the script, whose reply could reach no one.
// A backlog of such asks behind a slow handler is then cleared at the
// cost of a clock read each, not of a handler run each, which would keep
// every ask behind them timing out too. Only an ask that names a deadline
// reads the clock; a tell costs a nil check.
func (mb *mailbox) dropExpired(r *process.Received) bool {
	if !r.CanReply() || !askOver(r, time.Time{}) {
		return false
	}
	m := r.Message()
	p := mb.p
	p.Node().DeadLetter(process.DeadLetter{From: m.From, To: p.self.String(), Topic: m.Topic, Reason: process.DeadExpired})
	return true
}

// handBackAsks gives the core every ask the process holds unanswered, as
// its script ends.
func (p *Process) handBackAsks() {
	var out []process.Message
	if p.more != nil {
		for _, x := range p.more.asks.list {
			if !x.replied {
				out = append(out, x.r.Message())
			}
		}
		p.more.asks = heldAsks{}
	}
	keep := func(c *Channel) {
		if c == nil {
			return
		}
		c.mu.Lock()
		for _, it := range c.items[c.head:] {
			if r, ok := it.(process.Received); ok && r.CanReply() {
				out = append(out, r.Message())
			}
		}
		c.mu.Unlock()
	}
	keep(p.mbox.inbox)
	for _, c := range p.mbox.listens {
		keep(c)
	}
	if len(out) > 0 {
		p.proc.Unanswered(out...)
	}
}
