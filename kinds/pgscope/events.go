package pgscope

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/proctor-run/proctor/process"
)

// EventKind tells whether members joined or left.
type EventKind uint8

const (
	// MemberJoined: PIDs joined Group (a PID repeated once per join).
	MemberJoined EventKind = iota + 1
	// MemberLeft: PIDs left Group (a PID repeated once per copy that left).
	MemberLeft
)

// String returns "member.joined" or "member.left", the kind Lua sees.
func (k EventKind) String() string {
	switch k {
	case MemberJoined:
		return "member.joined"
	case MemberLeft:
		return "member.left"
	}
	return "unknown"
}

// Event is one membership change. PIDs is shared by every subscriber that
// receives the event: read it, never modify it.
type Event struct {
	Kind  EventKind
	Group string
	PIDs  []process.PID

	shared *sharedValue // Value, built once for every subscriber
}

// sharedValue is an event's value-model form, built by the first
// subscriber that asks for it.
type sharedValue struct {
	once sync.Once
	v    map[string]any
}

// event1 is an event of one PID, the usual one, as one allocation: its
// list and its shared value together.
type event1 struct {
	shared sharedValue
	pid    [1]process.PID
}

// newEvent1 returns the list and shared value of a new event of pid.
func newEvent1(pid process.PID) ([]process.PID, *sharedValue) {
	e := &event1{pid: [1]process.PID{pid}}
	return e.pid[:], &e.shared
}

// MaxSubscriptionsPerProcess bounds the subscriptions (Monitor, Events)
// one process holds in one scope: a script that opened 100,000 and read
// none made every change of the group cost 100,000 deliveries and its
// memory. One more is refused with ErrTooManySubscriptions (kind limit).
// Go code's subscriptions (a zero owner) are bounded by their caller.
const MaxSubscriptionsPerProcess = 1_000

// Value returns the event in the value model: {kind = "member.joined" or
// "member.left", group = name, pids = {pid strings}}. It is built once per
// change, however many subscribers the scope hands it to, and shared by
// all of them: read it, never modify it (the Lua host copies it into each
// script that receives it).
func (ev Event) Value() map[string]any {
	if ev.shared == nil {
		return ev.buildValue()
	}
	ev.shared.once.Do(func() { ev.shared.v = ev.buildValue() })
	return ev.shared.v
}

func (ev Event) buildValue() map[string]any {
	pids := make([]any, len(ev.PIDs))
	for i, pid := range ev.PIDs {
		pids[i] = pid.String()
	}
	return map[string]any{"kind": ev.Kind.String(), "group": ev.Group, "pids": pids}
}

// Subscription receives the membership events of one group (Monitor) or of
// every group (Events). Its channel holds up to monitor_buffer events; when
// it is full, further events are dropped for this subscriber alone and
// counted. The channel is closed when the subscription ends: Close, the
// owner's exit, or the scope stopping.
type Subscription struct {
	scope *Scope
	owner process.PID
	group string
	all   bool
	local bool // scope-wide, but only changes of this node's processes
	// reg: registered in the scope's state; the loop's alone.
	reg  bool
	ch   chan Event // nil when sink is set
	sink Sink

	// mu orders the loop's sends against Close, so Close can close the
	// channel (and flush it) without the loop ever sending on a closed
	// channel and without a round trip through a possibly full loop queue.
	mu      sync.Mutex
	closed  bool
	dropped atomic.Uint64
}

// Sink receives a subscription's events in place of its channel, for a
// consumer with its own queue (the Lua host hands a script's channel).
type Sink interface {
	// Offer queues ev without blocking; false means the subscriber's
	// buffer is full, and the event is dropped and counted.
	Offer(ev Event) bool
	// Close is called once, when the subscription ends.
	Close()
}

// SubscribeOptions configure Subscribe and SubscribeAll. The zero value is
// a subscription owned by Go code that delivers to its own channel of
// monitor_buffer events.
type SubscribeOptions struct {
	// Owner is a local process whose exit ends the subscription; zero
	// means the caller closes it.
	Owner process.PID
	// Sink replaces the channel when set (C then returns nil).
	Sink Sink
	// Context ends the caller's wait for the scope when done (a process
	// being terminated); nil waits up to protocol_timeout.
	Context context.Context
}

// C returns the event channel (nil for a subscription with a Sink).
func (sub *Subscription) C() <-chan Event { return sub.ch }

// Owner returns the process whose exit ends the subscription (zero for a
// subscription owned by Go code).
func (sub *Subscription) Owner() process.PID { return sub.owner }

// Group returns the monitored group, or "" and false for a scope-wide
// subscription.
func (sub *Subscription) Group() (string, bool) { return sub.group, !sub.all }

// Dropped returns how many events this subscriber lost to a full buffer.
func (sub *Subscription) Dropped() uint64 { return sub.dropped.Load() }

// Close ends the subscription. Events already buffered stay readable until
// the channel reports closed, unless flush is set, in which case they are
// discarded (OTP's demonitor flushes the same way; a Sink flushes its own
// queue). Closing twice is a no-op.
func (sub *Subscription) Close(flush bool) {
	if !sub.end(flush) {
		return
	}
	s := sub.scope
	s.urgentDo(func() { s.st.removeSub(sub) })
}

// end closes the channel once; it reports whether this call did.
func (sub *Subscription) end(flush bool) bool {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.closed {
		return false
	}
	sub.closed = true
	if sub.sink != nil {
		sub.sink.Close()
		return true
	}
	if flush {
		// Non-blocking: a reader may take the last event first.
	drain:
		for {
			select {
			case <-sub.ch:
			default:
				break drain
			}
		}
	}
	close(sub.ch)
	return true
}

// offer hands ev to the subscriber without ever blocking the loop.
func (sub *Subscription) offer(ev Event) {
	sub.mu.Lock()
	if sub.closed {
		sub.mu.Unlock()
		return
	}
	var ok bool
	if sub.sink != nil {
		ok = sub.sink.Offer(ev)
	} else {
		select {
		case sub.ch <- ev:
			ok = true
		default:
		}
	}
	sub.mu.Unlock()
	if !ok {
		sub.dropped.Add(1)
		sub.scope.m.dropped.Inc()
	}
}
