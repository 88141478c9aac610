package process

import (
	"time"
	"unsafe"
)

// Message is what a mailbox holds: who sent it, a topic, a payload and, for
// an ask, where the reply goes.
type Message struct {
	From    PID
	Topic   string
	Payload any

	// reply is nil unless the message has a reply target.
	reply *meta
}

// meta is what a message carries besides its payload: its topic, its
// sender and its reply target. A mailbox stores only a pointer to it, so a
// slot stays small — a mailbox with a backlog is memory the sender writes
// and the receiver reads, each cache line a transfer between cores, so the
// bytes per message are what a tell costs — and it is immutable, so tells
// share one: the last of a local sender's tells (process.tellMeta) or of
// the node's tells with no sender (Node.anonMeta), while the topic stays
// the same.
type meta struct {
	topic  string
	from   PID
	target ReplyTarget
	token  uint64
}

// sharedMeta returns a meta for the tells of one sender with one topic,
// which both sides read on every message: it is allocated alone in an
// aligned 128-byte pair of cache lines (sharedMetaBox), so no object that
// either side writes shares a line with it, nor the other line of its pair,
// which Intel's spatial prefetcher fetches along with it. A meta alone
// (72 bytes, in the 80-byte size class) sits at any multiple of 16 and
// shares its lines with its neighbours. The 48 bytes more are paid once
// per change of topic, not per message.
func sharedMeta(topic string, from PID) *meta {
	b := &sharedMetaBox{meta: meta{topic: topic, from: from}}
	return &b.meta
}

// sharedMetaBox is 128 bytes, a size class whose objects are 128-byte
// aligned (TestSharedMetaOwnsItsLines).
type sharedMetaBox struct {
	meta
	_ [128 - unsafe.Sizeof(meta{})]byte
}

// envelope is a message as a mailbox stores it: 24 bytes.
type envelope struct {
	meta    *meta // nil for a tell with no topic and no sender
	payload any
}

// open turns a stored envelope back into a Message.
func (e *envelope) open() Message {
	m := Message{Payload: e.payload}
	if mt := e.meta; mt != nil {
		m.Topic, m.From = mt.topic, mt.from
		if mt.target != nil {
			m.reply = mt
		}
	}
	return m
}

// ReplyTarget settles an ask. Settle reports whether this reply was the one
// that settled it: once settled, later replies are dropped silently, as are
// replies that arrive after the ask timed out. A transport implements it to
// carry replies back to a remote asker.
type ReplyTarget interface {
	Settle(token uint64, from PID, value any, err error) bool
}

// WithReply returns m addressed to reply through t with token. The
// message's deadline is whatever t reports (see Deadliner); see also
// WithReplyDeadline.
func (m Message) WithReply(t ReplyTarget, token uint64) Message {
	if t == nil {
		m.reply = nil
		return m
	}
	m.reply = &meta{topic: m.Topic, from: m.From, target: t, token: token}
	return m
}

// WithReplyDeadline is WithReply for an ask whose asker stops waiting at
// deadline (the zero time: none), for a reply target that does not
// report its deadline itself. The deadline travels with the message
// (Deadline), so a transport that carries it to another node can expire
// the reply it keeps for it.
func (m Message) WithReplyDeadline(t ReplyTarget, token uint64, deadline time.Time) Message {
	if t != nil && !deadline.IsZero() {
		t = &deadlineTarget{ReplyTarget: t, at: deadline}
	}
	return m.WithReply(t, token)
}

// Deadline returns when the asker of m stops waiting for its reply; ok is
// false for a tell, or an ask that names no deadline. An ask that is
// already settled reports a deadline long past.
func (m *Message) Deadline() (deadline time.Time, ok bool) {
	if m.reply == nil {
		return time.Time{}, false
	}
	if d, is := m.reply.target.(Deadliner); is {
		return d.ReplyDeadline(m.reply.token)
	}
	return time.Time{}, false
}

// A RecordAcceptor is a ReplyTarget whose asker may take a value.Record as
// the reply wherever a map[string]any would be (see Call.AcceptRecord).
type RecordAcceptor interface {
	AcceptsRecord(token uint64) bool
}

// AcceptsRecord reports whether the asker of m takes a value.Record reply
// (value.Copy gives its map); false for a tell and for every asker that
// did not say so, which gets maps.
func (m *Message) AcceptsRecord() bool {
	if m.reply == nil {
		return false
	}
	a, ok := m.reply.target.(RecordAcceptor)
	return ok && a.AcceptsRecord(m.reply.token)
}

// CanReply reports whether m has a reply target (it came from an ask, or a
// tell that named one).
func (m *Message) CanReply() bool { return m.reply != nil }

// Reply answers the ask m came from, attributed to from (the replying
// process). A non-nil err rejects the ask with that error. It returns
// ErrNoReplyTarget when m was a plain tell, and false with a nil error when
// the ask had already been settled (the reply was dropped).
func (m *Message) Reply(from PID, v any, err error) (bool, error) {
	if m.reply == nil {
		return false, ErrNoReplyTarget
	}
	return m.reply.target.Settle(m.reply.token, from, v, err), nil
}

// ReplyTarget returns where m's reply goes, so a router can hand it on.
func (m *Message) ReplyTarget() (ReplyTarget, uint64) {
	if m.reply == nil {
		return nil, 0
	}
	return m.reply.target, m.reply.token
}

// Exit is how a process ended: Err is nil for a normal exit, and Value is
// what it returned.
type Exit struct {
	Value any
	Err   error
}

// Normal reports whether the exit was normal.
func (e Exit) Normal() bool { return e.Err == nil }

// EventKind tells what an Event reports.
type EventKind uint8

const (
	// EventExit: a monitored process exited.
	EventExit EventKind = iota + 1
	// EventLinkDown: a linked process exited abnormally while the receiver
	// traps links.
	EventLinkDown
)

func (k EventKind) String() string {
	switch k {
	case EventExit:
		return "EXIT"
	case EventLinkDown:
		return "LINK_DOWN"
	}
	return "UNKNOWN"
}

// Event is a system notification delivered apart from ordinary messages.
type Event struct {
	Kind EventKind
	From PID
	Exit Exit
}

// DefaultAskTimeout is the deadline of an ask that names none.
const DefaultAskTimeout = 5 * time.Second
