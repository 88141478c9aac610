package process

import (
	"errors"
	"time"

	"github.com/proctor-run/proctor/value"
)

// DeadLetterReason says why a message reached no one.
type DeadLetterReason string

// The reasons of dead letters. They are label values of the runner's
// dead_letters_total metric: never change one.
const (
	// DeadNoProcess: the destination PID names no live process (it exited,
	// or never existed on this node).
	DeadNoProcess DeadLetterReason = "no_process"
	// DeadNameNotFound: no process is registered under the name.
	DeadNameNotFound DeadLetterReason = "name_not_found"
	// DeadMailboxFull: the destination's bounded mailbox was full.
	DeadMailboxFull DeadLetterReason = "mailbox_full"
	// DeadUnreachable: the destination's node cannot be reached.
	DeadUnreachable DeadLetterReason = "unreachable"
	// DeadTooLarge: the message is too large to cross to the
	// destination's node (value.ErrTooLarge).
	DeadTooLarge DeadLetterReason = "too_large"
	// DeadNoReplyTarget: a plain tell to a router that answers only asks
	// (a scatter or tail-chopping pool), dropped there.
	DeadNoReplyTarget DeadLetterReason = "no_reply_target"
	// DeadUnroutable: a plain tell a router could not route (no routees,
	// no key for consistent_hash), dropped there.
	DeadUnroutable DeadLetterReason = "unroutable"
	// DeadLateReply: a reply that came after its ask had ended (its
	// deadline passed, or its asker stopped waiting).
	DeadLateReply DeadLetterReason = "late_reply"
	// DeadExpired: an ask whose asker had stopped waiting (its deadline
	// passed, or it was settled) when it reached the front of its
	// receiver's mailbox, dropped there instead of handed to the
	// receiver's script (the Lua host reports it).
	DeadExpired DeadLetterReason = "expired"
)

// DeadLetter is a message that reached no one.
type DeadLetter struct {
	Time time.Time
	// From is the sender: the replier of a late reply; zero when the
	// sender was not a process.
	From PID
	// To is the destination as it was addressed: a PID string, a name,
	// or name@node; the asker of a late reply.
	To     string
	Topic  string
	Reason DeadLetterReason
}

// DeadLetterSink receives the node's dead letters (Options.DeadLetters).
// DeadLetter is called on the goroutine of the sender that failed, so it
// must return promptly and never block; a message that is delivered never
// reaches it.
type DeadLetterSink interface {
	DeadLetter(d DeadLetter)
}

// DeadLetter reports a message that reached no one to the node's sink;
// without a sink it does nothing. The core reports what it sees itself —
// sends to dead or unknown PIDs and names, full mailboxes, unreachable
// nodes, late replies (Reply) —; a router reports the tells it drops.
// A zero d.Time is set to now.
func (n *Node) DeadLetter(d DeadLetter) {
	if n.deadLetters == nil {
		return
	}
	if d.Time.IsZero() {
		d.Time = time.Now()
	}
	n.deadLetters.DeadLetter(d)
}

// undelivered reports m, which could not be delivered to to because of
// err, as a dead letter; commands to a stopped owner are the runtime's
// own traffic and are not. It returns err.
func (n *Node) undelivered(to string, m *Message, err error) error {
	if n.deadLetters != nil && m.Topic != commandTopic {
		n.DeadLetter(DeadLetter{From: m.From, To: to, Topic: m.Topic, Reason: deadReason(err)})
	}
	return err
}

// deadReason maps a delivery error to its dead-letter reason.
func deadReason(err error) DeadLetterReason {
	switch {
	case errors.Is(err, ErrMailboxFull):
		return DeadMailboxFull
	case errors.Is(err, ErrNameNotFound):
		return DeadNameNotFound
	case errors.Is(err, ErrNoProcess):
		return DeadNoProcess
	case errors.Is(err, value.ErrTooLarge):
		return DeadTooLarge
	}
	return DeadUnreachable
}

// Reply answers the ask m came from on behalf of from, as Message.Reply
// does, and reports a reply that came after its ask had ended — its
// deadline passed, or its asker stopped waiting — as a dead letter
// (DeadLateReply). Only the core's own asks (Ask, AskFunc, Call) report:
// a reply target of another kind decides for itself what an unsettled
// reply means (the losers of a scatter are expected and dropped
// silently). Processes answer through Reply (Context.Reply does); Go code
// that must stay silent calls Message.Reply.
func (n *Node) Reply(m *Message, from PID, v any, err error) (bool, error) {
	settled, rerr := m.Reply(from, v, err)
	if !settled && rerr == nil && n.deadLetters != nil && lateIsDead(m.reply.target) {
		n.DeadLetter(DeadLetter{From: from, To: m.reply.from.String(), Topic: m.Topic, Reason: DeadLateReply})
	}
	return settled, rerr
}

// lateIsDead reports whether an unsettled reply to t is a dead letter: t
// is the target of an Ask, AskFunc or Call, whose asker stops waiting.
func lateIsDead(t ReplyTarget) bool {
	if d, ok := t.(*deadlineTarget); ok {
		t = d.ReplyTarget
	}
	switch t.(type) {
	case *askRef, *funcRef:
		return true
	}
	return false
}
