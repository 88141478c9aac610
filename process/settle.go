package process

import (
	"fmt"

	"github.com/proctor-run/proctor/value"
)

// An ask to a process that exits fails at once, as OTP's gen:call does
// when its callee goes down: the asks still in the process's mailbox, the
// one a Behavior was handling, and those a goroutine process holds
// unanswered (Proc.Unanswered) are settled with an error of kind stopped
// that names the exit, instead of leaving each asker to its timeout. A
// reply that had already settled an ask wins: settling is one-shot, so
// those are untouched. Settling happens on the process's own goroutine
// once it is dead, so the send and receive paths pay nothing for it; a
// killed goroutine process whose function never returns (an abandoned
// one) leaves its askers to their deadlines.

// ErrExited: the process an ask went to exited before it replied. Its
// Cause is the process's exit reason (nil for a normal exit).
var ErrExited = value.Sentinel("process.exited", value.KindStopped, "the process exited before it replied")

// exitedError is the error that settles an ask pid will never answer.
func exitedError(pid PID, e Exit) *value.Error {
	if e.Err == nil {
		return &value.Error{Kind: value.KindStopped, Code: ErrExited.Code,
			Message: fmt.Sprintf("%s exited (normal) before it replied", pid)}
	}
	reason := value.FromError(e.Err)
	return &value.Error{Kind: value.KindStopped, Code: ErrExited.Code, Cause: reason,
		Message: fmt.Sprintf("%s exited before it replied: %s: %s", pid, reason.Kind, reason.Message)}
}

// Unanswered hands the core asks the process took from its mailbox and
// will not answer: once the process has exited, their askers are told at
// once with its exit reason, as the asks left in its mailbox are. A
// goroutine process that keeps messages of its own (the Lua host's
// channels, a message a script holds) calls it as its function returns;
// messages that are not asks, or whose ask was settled, are ignored. Only
// the process's own goroutine may call it.
func (h *Proc) Unanswered(ms ...Message) {
	x := h.p.ext.Load()
	for i := range ms {
		if ms[i].reply != nil {
			x.held = append(x.held, ms[i].reply)
		}
	}
}

// settleOnExit fails every ask p will never answer: held (the message a
// Behavior was handling when it ended), those a goroutine process handed
// back, and those left in its mailbox. Only the consumer of p's mailbox
// calls it, once p is dead, so the mailbox is closed to senders and nobody
// else pops.
func (p *process) settleOnExit(e Exit, held *meta) {
	var err *value.Error
	settle := func(m *meta) {
		if m == nil || m.target == nil {
			return
		}
		if err == nil {
			err = exitedError(p.pid, e)
		}
		m.target.Settle(m.token, p.pid, nil, err)
	}
	settle(held)
	if x := p.ext.Load(); x != nil && len(x.held) > 0 {
		kept := x.held
		x.held = nil
		for _, m := range kept {
			settle(m)
		}
	}
	for {
		env, ok := p.mb.pop()
		if !ok {
			break
		}
		settle(env.meta)
	}
	p.mb.trim()
}

// exitOf returns how p ended: what finish recorded, or e when p has no
// extension to record it in (a Behavior that never needed one, killed).
func (p *process) exitOf(e Exit) Exit {
	p.mu.Lock()
	defer p.mu.Unlock()
	if x := p.ext.Load(); x != nil {
		return x.exit
	}
	return e
}
