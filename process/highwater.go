package process

import (
	"cmp"
	"slices"
)

// Mailbox high-water marks: each mailbox keeps the most messages it has
// held at once (see queue.mark: exact for a bounded mailbox, within 64
// messages for an unbounded one, whose depth is sampled once per 64
// sends), and the node keeps the highest mark of the processes that have
// exited. Nothing is added to the path of a send but one comparison per
// 64 messages.

// MailboxStats describes one process's mailbox.
type MailboxStats struct {
	PID PID `json:"pid"`
	// Len is the number of messages waiting now.
	Len int `json:"len"`
	// HighWater is the most messages it has held at once (see above).
	HighWater int `json:"high_water"`
}

// Mailbox returns the mailbox of the local process pid; ok is false when
// there is no such process.
func (n *Node) Mailbox(pid PID) (MailboxStats, bool) {
	p := n.lookup(pid)
	if p == nil {
		return MailboxStats{}, false
	}
	return MailboxStats{PID: pid, Len: p.mb.len(), HighWater: p.mb.highWater()}, true
}

// retireHighWater keeps an exiting process's mark in the node's.
func (n *Node) retireHighWater(hw int) {
	for {
		cur := n.retiredHW.Load()
		if int64(hw) <= cur || n.retiredHW.CompareAndSwap(cur, int64(hw)) {
			return
		}
	}
}

// MailboxSummary is the node's mailboxes at a glance.
type MailboxSummary struct {
	// Processes is the number of live processes.
	Processes int `json:"processes"`
	// HighWater is the highest mailbox high-water mark on the node, of
	// live and exited processes alike.
	HighWater int `json:"high_water"`
	// Deepest are the live processes with the most messages waiting,
	// deepest first (empty mailboxes are left out).
	Deepest []MailboxStats `json:"deepest"`
}

// Mailboxes summarises the node's mailboxes, with the top deepest ones.
// It visits every live process: call it for a report, not per message.
func (n *Node) Mailboxes(top int) MailboxSummary {
	s := MailboxSummary{HighWater: int(n.retiredHW.Load()), Deepest: []MailboxStats{}}
	n.procs.each(func(p *process) {
		s.Processes++
		hw := p.mb.highWater()
		s.HighWater = max(s.HighWater, hw)
		l := p.mb.len()
		if top <= 0 || l == 0 {
			return
		}
		if len(s.Deepest) == top && l <= s.Deepest[top-1].Len {
			return
		}
		st := MailboxStats{PID: p.pid, Len: l, HighWater: hw}
		i, _ := slices.BinarySearchFunc(s.Deepest, l, func(e MailboxStats, l int) int { return cmp.Compare(l, e.Len) })
		if len(s.Deepest) < top {
			s.Deepest = slices.Insert(s.Deepest, i, st)
			return
		}
		copy(s.Deepest[i+1:], s.Deepest[i:top-1])
		s.Deepest[i] = st
	})
	return s
}
