package pool

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// The four messages of the aggregate error, as the seed words them.
const (
	msgNoneReplied = "none of %d routees replied within %dms"
	msgAllFailed   = "all %d routees failed"
	msgNoRoutees   = "no routees left to scatter to"
	msgStopped     = "stopped while the scatter was still open"
)

// race is one scatter/gather or tail chop: several routees asked, the
// first reply wins. It is the reply target of its own asks (the token is
// the routee's index), with one deadline timer for the whole race, so it
// never holds the router's loop, and a reply reaches the caller in one
// hop. mu guards the per-routee bookkeeping.
type race struct {
	p      *core
	target process.ReplyTarget
	token  uint64
	msg    process.Message
	pids   []process.PID // in scatter order
	start  time.Time
	tmo    time.Duration
	tail   bool
	every  time.Duration
	hold   *snapshot // tail: kept in use until every routee was asked

	done atomic.Bool
	// scattered is set once the first routee is asked: a race that ends
	// before (no routees, a stopping pool) ran no scatter, and its time is
	// no winner's latency.
	scattered atomic.Bool
	mu        sync.Mutex
	answered  []bool // routee i replied (or could not be asked)
	expired   bool   // the deadline passed: later replies are late
	errs      []*value.Error
	failed    int
	asked     int
	next      *time.Timer // tail: the next ask
	deadline  *time.Timer // the whole race's deadline
}

var (
	_ process.ReplyTarget = (*race)(nil)
	_ process.Deadliner   = (*race)(nil)
)

// ReplyDeadline implements process.Deadliner: every ask of a race has the
// race's deadline, so a transport carrying one to a routee on another node
// can expire it.
func (r *race) ReplyDeadline(uint64) (time.Time, bool) { return r.start.Add(r.tmo), true }

func (p *core) startRace(st Strategy, timeout, interval time.Duration, rs routees, m process.Message, t process.ReplyTarget, tok uint64) {
	r := &race{
		p: p, target: t, token: tok, start: time.Now(), tmo: timeout,
		tail: st == TailChopping, every: interval,
		msg: process.Message{From: m.From, Topic: m.Topic, Payload: m.Payload},
	}
	// Every field a concurrent stop reads is set before r joins the open
	// set: from then on Stop's sweep may settle it at any moment.
	n := len(rs.pids)
	if n > 0 {
		r.errs = make([]*value.Error, n)
		r.answered = make([]bool, n)
		if !r.tail {
			r.pids = rs.pids // immutable: a pool's snapshot, a scope's list
		} else {
			r.pids = make([]process.PID, n)
			for i, j := range rand.Perm(n) {
				r.pids[i] = rs.pids[j]
			}
			if rs.hold != nil {
				rs.hold.readers.Add(1)
				r.hold = rs.hold
			}
		}
	}
	p.open.Store(r, struct{}{})
	p.nOpen.Add(1)
	if p.stopping.Load() {
		// Stop may have swept the open set before r joined it.
		r.stop()
		return
	}
	if n == 0 {
		r.settleFail(OutcomeAllFailed, value.Aggregate(msgNoRoutees, nil))
		return
	}
	r.mu.Lock()
	if !r.done.Load() {
		r.deadline = time.AfterFunc(r.tmo, r.expire)
	}
	r.mu.Unlock()
	r.scattered.Store(true)
	if r.tail {
		r.askNext()
		return
	}
	for i := range r.pids {
		r.ask(i)
	}
}

// ask sends the message to routee i with r as its reply target; a send
// that fails is routee i's answer.
func (r *race) ask(i int) {
	if err := r.p.node.Send(r.pids[i], r.msg.WithReply(r, uint64(i))); err != nil {
		r.Settle(uint64(i), process.PID{}, nil, err)
	}
}

// askNext asks the next routee of a tail chop and schedules the one after.
func (r *race) askNext() {
	r.mu.Lock()
	if r.done.Load() || r.asked >= len(r.pids) {
		r.mu.Unlock()
		return
	}
	i := r.asked
	r.asked++
	if r.next != nil {
		r.next.Stop()
		r.next = nil
	}
	last := r.asked == len(r.pids)
	if !last {
		r.next = time.AfterFunc(r.every, r.askNext)
	}
	r.mu.Unlock()
	r.ask(i)
	if last {
		r.release()
	}
}

// release lets a retiring routee of the held snapshot stop; once.
func (r *race) release() {
	r.mu.Lock()
	h := r.hold
	r.hold = nil
	r.mu.Unlock()
	if h != nil {
		h.readers.Add(-1)
	}
}

// Settle implements process.ReplyTarget: routee token's answer. The first
// reply wins the race; an error moves it on. It reports whether this was
// routee token's first answer within the deadline: a loser that answers in
// time settled its own ask, although the race was already won, and its
// reply is dropped silently (no dead letter, no metric).
func (r *race) Settle(token uint64, from process.PID, v any, err error) bool {
	if token >= uint64(len(r.pids)) {
		return false
	}
	i := int(token)
	r.mu.Lock()
	if r.answered[i] || r.expired {
		r.mu.Unlock()
		return false
	}
	r.answered[i] = true
	if err == nil || r.done.Load() {
		r.mu.Unlock()
		if err == nil && r.done.CompareAndSwap(false, true) {
			r.resolved(OutcomeFirst)
			r.target.Settle(r.token, from, v, nil)
		}
		return true
	}
	r.errs[i] = value.FromError(err)
	r.failed++
	all := r.failed == len(r.pids)
	moveOn := r.tail && !all && r.failed == r.asked
	r.mu.Unlock()
	if all {
		r.fail()
	} else if moveOn {
		// Every routee asked so far has failed: ask the next one now
		// rather than waiting out the interval.
		r.askNext()
	}
	return true
}

// expire ends the race at its deadline; routees that never answered, or
// were never asked, count as timed out.
func (r *race) expire() {
	r.mu.Lock()
	r.expired = true
	r.mu.Unlock()
	r.fail()
}

func (r *race) fail() {
	if r.done.Load() {
		return
	}
	r.mu.Lock()
	errs := make([]*value.Error, len(r.errs))
	allTimeout := true
	for i, e := range r.errs {
		switch {
		case e != nil:
		case r.tail:
			e = value.NewError(value.KindTimeout, "ask %s: no reply within %s", r.pids[i], r.tmo)
		default:
			// As the routee's own ask would have timed out.
			e = value.NewError(value.KindTimeout, "ask %s after %s: %s", r.pids[i], r.tmo, process.ErrTimeout.Message)
		}
		errs[i] = e
		allTimeout = allTimeout && e.Kind == value.KindTimeout
	}
	r.mu.Unlock()
	n := len(errs)
	if allTimeout {
		r.settleFail(OutcomeTimeout, value.Aggregate(fmt.Sprintf(msgNoneReplied, n, r.tmo.Milliseconds()), errs))
		return
	}
	r.settleFail(OutcomeAllFailed, value.Aggregate(fmt.Sprintf(msgAllFailed, n), errs))
}

// stop fails the race because the pool stops.
func (r *race) stop() { r.settleFail(OutcomeStopped, value.Aggregate(msgStopped, nil)) }

func (r *race) settleFail(outcome string, agg *value.Error) {
	if !r.done.CompareAndSwap(false, true) {
		return
	}
	r.resolved(outcome)
	r.target.Settle(r.token, r.p.pid, nil, agg)
}

// resolved runs once per race, just before the caller is answered, so a
// caller that reads the metrics or the open count sees its own scatter
// accounted for.
func (r *race) resolved(outcome string) {
	r.mu.Lock()
	if r.next != nil {
		r.next.Stop()
	}
	if r.deadline != nil {
		r.deadline.Stop()
	}
	r.mu.Unlock()
	r.release()
	r.p.open.Delete(r)
	r.p.nOpen.Add(-1)
	r.p.met.resolved.WithLabelValues(outcome).Inc()
	if r.scattered.Load() {
		// The winner's latency (or the failure's): the distribution a
		// scatter is for. A race that scattered nothing observes nothing,
		// as no-reply-target does.
		r.p.met.latency.Observe(time.Since(r.start).Seconds())
	}
}

// failOpen fails every open race at once: the routees are being stopped,
// so no reply can come, and waiting out the deadlines would only make a
// shutdown as slow as the longest one.
func (p *core) failOpen() {
	p.open.Range(func(k, _ any) bool {
		k.(*race).stop()
		return true
	})
}
