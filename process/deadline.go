package process

import (
	"math"
	"time"
)

// An ask's deadline lives with its reply target, not in the message: the
// target is made once per ask anyway, while a field in the message's meta
// costs every message. Message.Deadline asks the target.

// Deadliner is implemented by a ReplyTarget that knows when its asker
// stops waiting: the targets of Ask, AskFunc and Call, and a transport's
// target for an ask from another node. ReplyDeadline reports the deadline
// of the ask of token; ok is false when it names none.
type Deadliner interface {
	ReplyDeadline(token uint64) (deadline time.Time, ok bool)
}

// epoch is the origin of the deadlines kept as integers. It carries a
// monotonic clock reading, so deadlines are immune to changes of the wall
// clock.
var epoch = time.Now()

// past is the deadline of an ask that is already over.
var past = epoch

// deadlineIn is a deadline timeout from now, as nanoseconds since epoch.
// A timeout too large to add (a script's math.huge is the largest
// Duration) is the farthest deadline: the sum overflowed to a negative
// one, an ask already over before it was sent.
func deadlineIn(timeout time.Duration) int64 {
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	since := time.Since(epoch)
	if timeout > math.MaxInt64-since {
		return math.MaxInt64
	}
	return int64(since + timeout)
}

// deadlineOf turns a deadline kept by deadlineIn (0: none) into a time.
func deadlineOf(d int64) (time.Time, bool) {
	if d == 0 {
		return time.Time{}, false
	}
	return epoch.Add(time.Duration(d)), true
}

// askDeadline is the deadline of an Ask or AskFunc of to: set when the ask
// leaves the node, where a transport needs it; none for a local process,
// which spares every local ask a clock read.
func (n *Node) askDeadline(to PID, timeout time.Duration) int64 {
	if !n.isRemote(to) {
		return 0
	}
	return deadlineIn(timeout)
}

// ReplyDeadline implements Deadliner for a Call.
func (r *askRef) ReplyDeadline(token uint64) (time.Time, bool) {
	d := r.deadline.Load()
	if r.state.Load() != token {
		return past, true // settled, or the ref serves a later call
	}
	return deadlineOf(d)
}

// ReplyDeadline implements Deadliner for an AskFunc.
func (r *funcRef) ReplyDeadline(uint64) (time.Time, bool) {
	if r.done.Load() {
		return past, true
	}
	return deadlineOf(r.deadline)
}

// deadlineTarget gives a reply target without a deadline of its own the
// one WithReplyDeadline names.
type deadlineTarget struct {
	ReplyTarget
	at time.Time
}

func (d *deadlineTarget) ReplyDeadline(uint64) (time.Time, bool) { return d.at, true }

var (
	_ Deadliner = (*askRef)(nil)
	_ Deadliner = (*funcRef)(nil)
	_ Deadliner = (*deadlineTarget)(nil)
)
