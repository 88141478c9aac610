package process

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// askResult is what settles an ask.
type askResult struct {
	value any
	from  PID
	err   error
}

// askRef is the one-shot reply reference of a blocking ask. Refs are
// pooled; state holds the current ask's token (even) or token+1 once
// settled, so a late reply to an earlier ask on the same ref fails its
// compare-and-swap and is dropped.
//
// Its timer is not set and stopped per ask, which was a large part of an
// ask's cost (a timer's Reset and Stop each lock it and the heap of
// timers it sits in): as a call's waiter's (call.go), it stays set across
// the asks that reuse the ref, and a Wait only writes its deadline (due,
// for the call of dueToken) and sets the timer when it would fire too
// late for that deadline, or not at all. When the timer fires, expire
// times out the call whose Wait set its deadline, if that call is still
// the ref's pending one and its deadline has passed, and otherwise sets
// the timer again for that deadline; with no such call it stays unset
// until the next Wait. A settled call's token no longer matches any
// compare-and-swap, so a late expiry can strike only a call whose own
// deadline has passed, and a ref is always reused, whatever its timer
// did. A ref left set for more than farArm is stopped when its call ends
// (release), so a ref the pool lets go is not held by its timer for
// longer than that.
type askRef struct {
	state    atomic.Uint64
	deadline atomic.Int64  // of the current call, 0 for none; see ReplyDeadline
	ch       chan struct{} // capacity 1: whoever settles the call sends once
	res      askResult     // the call's result: written by its settler before the send on ch
	wake     *Proc         // notified when the call settles; see WakeOnSettle
	record   atomic.Uint64 // the call (its token) whose caller takes a value.Record reply; see AcceptRecord

	timer    keptTimer // fires expire; its mu guards what follows
	dueToken uint64    // the call whose Wait set due
	due      int64     // when that Wait times out, since epoch
}

// beforeExpire, set only by tests, runs as an ask's timer fires, before
// expire looks at the call: it widens the window in which a fired timer
// races a reply (TestAskTimeoutNeverStrikesTheNextAsk).
var beforeExpire atomic.Pointer[func()]

// errExpired is what expire settles a call with: Wait's timeout, which no
// replier can send.
var errExpired = errors.New("process: ask expired")

// arm makes sure the timer fires by timeout from now for the call of
// token, the ref's pending one.
func (r *askRef) arm(token uint64, timeout time.Duration) {
	now := int64(time.Since(epoch))
	due := int64(math.MaxInt64)
	if timeout < time.Duration(math.MaxInt64-now) {
		due = now + int64(timeout)
	}
	r.timer.markFar(due, now)
	r.timer.mu.Lock()
	r.dueToken, r.due = token, due
	r.timer.setBy(due, now)
	r.timer.mu.Unlock()
}

// expire settles the current call as timed out, from the timer's
// goroutine, once its deadline has passed: Wait then receives on ch alone
// instead of a select with a timer channel, a large part of an ask's cost
// (as a Call's waiter does, call.go). Otherwise it sets the timer again
// for that deadline.
func (r *askRef) expire() {
	if h := beforeExpire.Load(); h != nil {
		(*h)()
	}
	r.timer.mu.Lock()
	defer r.timer.mu.Unlock()
	r.timer.armed = false
	t := r.dueToken
	if r.state.Load() != t {
		return // settled: nothing to time until the next Wait
	}
	if now := int64(time.Since(epoch)); now < r.due {
		r.timer.setBy(r.due, now)
		return
	}
	if r.state.CompareAndSwap(t, t+1) {
		r.res = askResult{err: errExpired}
		r.ch <- struct{}{}
	}
}

// release puts r, settled and its result taken, back in the pool, holding
// no process and no result.
func (r *askRef) release() {
	r.timer.releaseFar()
	r.res = askResult{}
	r.wake = nil
	// record needs no reset: it names a call, and the ref's next call
	// has another token.
	askPool.Put(r)
}

var askPool = sync.Pool{New: func() any {
	r := &askRef{ch: make(chan struct{}, 1)}
	initKeptTimer(&r.timer, r, (*askRef).expire)
	return r
}}

func (r *askRef) Settle(token uint64, from PID, v any, err error) bool {
	if !r.state.CompareAndSwap(token, token+1) {
		return false
	}
	// Read before the send: once the caller has the result, r may be
	// released and reused.
	wake := r.wake
	r.res = askResult{value: v, from: from, err: err}
	r.ch <- struct{}{}
	if wake != nil {
		wake.Notify()
	}
	return true
}

// AcceptsRecord implements RecordAcceptor: the current call, token, said
// it takes a value.Record (AcceptRecord). A late replier may read the next
// call's word; its reply is dropped all the same.
func (r *askRef) AcceptsRecord(token uint64) bool {
	return r.state.Load() == token && r.record.Load() == token
}

// Reply is what settled an ask: the value, the process that replied, and
// the error it replied with (a rejection).
type Reply struct {
	Value any
	From  PID
	Err   error
}

// Call is one blocking ask whose message the caller delivers itself — a
// router that picks its routee, a Lua process that must also give up when
// it is asked to stop. Its reply reference is one-shot (a second or a late
// reply is dropped silently) and pooled, so an ask allocates only the
// message's reply pointer. Use a Call exactly once: Message, deliver, then
// Wait (or Abandon when delivery failed).
type Call struct {
	r     *askRef
	token uint64
}

// NewCall returns a call ready to be attached to a message.
func NewCall() Call {
	r := askPool.Get().(*askRef)
	token := (r.state.Load() + 2) &^ 1
	r.state.Store(token)
	if r.deadline.Load() != 0 {
		r.deadline.Store(0) // after state: see ReplyDeadline
	}
	return Call{r: r, token: token}
}

// Message returns m addressed to reply to c. The message names no
// deadline: prefer MessageWithin, whose deadline lets a transport expire
// the reply it keeps when the message crosses to another node.
func (c Call) Message(m Message) Message { return m.WithReply(c.r, c.token) }

// MessageWithin returns m addressed to reply to c, carrying the deadline
// of a Wait of timeout that starts now (0 means DefaultAskTimeout).
func (c Call) MessageWithin(m Message, timeout time.Duration) Message {
	c.r.deadline.Store(deadlineIn(timeout))
	return m.WithReply(c.r, c.token)
}

// Deadline is the deadline MessageWithin gave c's message, read without
// the clock (it carries a monotonic reading); ok is false when c's message
// names none.
func (c Call) Deadline() (time.Time, bool) { return deadlineOf(c.r.deadline.Load()) }

// take receives the reply that settled c and releases it.
func (c Call) take() Reply {
	r := c.r
	<-r.ch
	res := r.res
	r.release()
	return Reply{Value: res.value, From: res.from, Err: res.err}
}

// WakeOnSettle makes the settling of c wake the process h (Proc.Notify),
// for a process that suspends (Proc.Suspend) rather than wait in Wait: it
// looks with Poll when it goes on, and ends the call with Abandon when it
// gives up. Call it before the message is delivered.
func (c Call) WakeOnSettle(h *Proc) { c.r.wake = h }

// AcceptRecord says that c's caller takes a value.Record as the reply
// wherever a map[string]any would be (Message.AcceptsRecord): a replier
// that has the reply in another form (a Lua table) lists its fields
// instead of building a map. Call it before the message is delivered.
func (c Call) AcceptRecord() { c.r.record.Store(c.token) }

// Poll returns the reply that settled c, and releases c; ok is false while
// c is not settled.
func (c Call) Poll() (r Reply, ok bool) {
	select {
	case <-c.r.ch:
		res := c.r.res
		c.r.release()
		return Reply{Value: res.value, From: res.from, Err: res.err}, true
	default:
		return Reply{}, false
	}
}

// Settled reports whether c has been settled (Poll would return its reply).
func (c Call) Settled() bool { return len(c.r.ch) > 0 }

// Abandon ends a call whose message could not be delivered, returning err.
// When a reply settled the call all the same (a broadcast that reached some
// processes before failing), that reply is returned with a nil error.
func (c Call) Abandon(err error) (Reply, error) {
	if c.r.state.CompareAndSwap(c.token, c.token+1) {
		c.r.release()
		return Reply{}, err
	}
	return c.take(), nil
}

// Wait waits for the reply at most timeout (0 means DefaultAskTimeout), or
// until done is closed (nil: never), and releases the call. Its error is
// nil when a reply came — the reply's own error is in Reply.Err —,
// ErrTimeout when the deadline passed first, ErrCallAbandoned when done
// closed first.
func (c Call) Wait(timeout time.Duration, done <-chan struct{}) (Reply, error) {
	r := c.r
	if r.state.Load() == c.token {
		// Not settled yet: time the wait. (Settled already, the
		// reply is on its way: nothing to time, nothing to watch.)
		if timeout <= 0 {
			timeout = DefaultAskTimeout
		}
		r.arm(c.token, timeout)
		if done == nil {
			<-r.ch
		} else {
			select {
			case <-r.ch:
			case <-done:
				if r.state.CompareAndSwap(c.token, c.token+1) {
					r.release()
					return Reply{}, ErrCallAbandoned
				}
				<-r.ch // settled meanwhile, by a reply or the clock
			}
		}
	} else {
		<-r.ch
	}
	res := r.res
	r.release()
	if res.err == errExpired {
		return Reply{}, ErrTimeout
	}
	return Reply{Value: res.value, From: res.from, Err: res.err}, nil
}

// Ask sends m to to and waits for its reply at most timeout (0 means
// DefaultAskTimeout). It returns the reply and the PID of the process that
// replied. Failures: a send error at once, the replier's error, or
// ErrTimeout when the deadline passes first.
func (n *Node) Ask(to PID, m Message, timeout time.Duration) (any, PID, error) {
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	c := NewCall()
	var r Reply
	var err error
	if d := n.askDeadline(to, timeout); d != 0 {
		c.r.deadline.Store(d)
	}
	if serr := n.Send(to, c.Message(m)); serr != nil {
		r, err = c.Abandon(serr)
	} else {
		r, err = c.Wait(timeout, nil)
		if err != nil {
			err = fmt.Errorf("ask %s after %s: %w", to, timeout, err)
		}
	}
	if err != nil {
		return nil, PID{}, err
	}
	return r.Value, r.From, r.Err
}

// funcRef settles an asynchronous ask by calling its callback once.
type funcRef struct {
	done     atomic.Bool
	timer    atomic.Pointer[time.Timer]
	fn       func(v any, from PID, err error)
	deadline int64 // see askDeadline
}

func (r *funcRef) Settle(_ uint64, from PID, v any, err error) bool {
	if !r.done.CompareAndSwap(false, true) {
		return false
	}
	if t := r.timer.Load(); t != nil {
		t.Stop()
	}
	r.fn(v, from, err)
	return true
}

// AskFunc sends m to to as an ask and returns at once; fn is called exactly
// once, with the reply, the replier's error, a send error or ErrTimeout,
// on whichever goroutine settles the ask. It lets a loop fan out many asks
// without blocking or holding a goroutine per ask.
func (n *Node) AskFunc(to PID, m Message, timeout time.Duration, fn func(v any, from PID, err error)) {
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	r := &funcRef{fn: fn, deadline: n.askDeadline(to, timeout)}
	r.timer.Store(time.AfterFunc(timeout, func() {
		r.Settle(0, PID{}, nil, fmt.Errorf("ask %s after %s: %w", to, timeout, ErrTimeout))
	}))
	if err := n.Send(to, m.WithReply(r, 0)); err != nil {
		r.Settle(0, PID{}, nil, err)
	}
}
