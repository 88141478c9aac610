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
// first reply wins. It lives on AskFunc callbacks and timers, never on the
// pool's loop; mu guards the per-routee bookkeeping shared by them.
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

	done     atomic.Bool
	mu       sync.Mutex
	errs     []*value.Error
	failed   int
	asked    int
	next     *time.Timer // tail: the next ask
	deadline *time.Timer // tail: the whole chop's deadline
}

func (p *core) startRace(st Strategy, timeout, interval time.Duration, s *snapshot, m process.Message, t process.ReplyTarget, tok uint64) {
	r := &race{
		p: p, target: t, token: tok, start: time.Now(), tmo: timeout,
		tail: st == TailChopping, every: interval,
		msg: process.Message{From: m.From, Topic: m.Topic, Payload: m.Payload},
	}
	// Every field a concurrent stop reads is set before r joins the open
	// set: from then on Stop's sweep may settle it at any moment.
	n := len(s.pids)
	if n > 0 {
		r.errs = make([]*value.Error, n)
		if !r.tail {
			r.pids = s.pids
		} else {
			r.pids = make([]process.PID, n)
			for i, j := range rand.Perm(n) {
				r.pids[i] = s.pids[j]
			}
			s.readers.Add(1)
			r.hold = s
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
	if !r.tail {
		for i, pid := range r.pids {
			p.node.AskFunc(pid, r.msg, r.tmo, func(v any, from process.PID, err error) { r.settle(i, v, from, err) })
		}
		return
	}
	r.mu.Lock()
	if !r.done.Load() {
		r.deadline = time.AfterFunc(r.tmo, r.expire)
	}
	r.mu.Unlock()
	r.askNext()
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
	left := time.Until(r.start.Add(r.tmo))
	r.mu.Unlock()
	if left <= 0 {
		r.expire()
		return
	}
	r.p.node.AskFunc(r.pids[i], r.msg, left, func(v any, from process.PID, err error) { r.settle(i, v, from, err) })
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

// settle takes routee i's answer: the first reply wins; an error moves on.
func (r *race) settle(i int, v any, from process.PID, err error) {
	if err == nil {
		if r.done.CompareAndSwap(false, true) {
			r.resolved(OutcomeFirst)
			r.target.Settle(r.token, from, v, nil)
		}
		// A loser's reply lands on its own one-shot ref and is dropped
		// silently: no dead letter, no metric.
		return
	}
	r.mu.Lock()
	if r.errs[i] == nil {
		r.errs[i] = value.FromError(err)
		r.failed++
	}
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
}

// expire ends a tail chop at its deadline; routees that never answered, or
// were never asked, count as timed out.
func (r *race) expire() { r.fail() }

func (r *race) fail() {
	if r.done.Load() {
		return
	}
	r.mu.Lock()
	errs := make([]*value.Error, len(r.errs))
	allTimeout := true
	for i, e := range r.errs {
		if e == nil {
			e = value.NewError(value.KindTimeout, "ask %s: no reply within %s", r.pids[i], r.tmo)
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
	r.p.met.latency.Observe(time.Since(r.start).Seconds())
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
