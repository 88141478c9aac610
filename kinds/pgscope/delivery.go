package pgscope

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Delivery of membership events.
//
// A change is offered to its group's subscriptions and to the scope-wide
// ones. A few subscriptions (at most inlineFanout) the loop offers the event
// itself, as it always did: a few non-blocking sends. Many subscriptions
// (a hundred processes each holding a thousand unread monitors of one
// group) would cost the loop milliseconds per change, and every other group
// of the scope would wait behind them; so the loop hands the event to the
// group's delivery queue instead, which a goroutine of its own drains in
// order, and goes on with the next command at once.
//
// What a caller is promised holds either way: when Join or Leave returns,
// its events are in every subscriber's buffer (or counted in Dropped),
// because the caller waits for its groups' queues to deliver them (see
// Scope.awaitDelivery) — only for those queues, never behind another
// group's backlog. Each subscriber still sees its events in the loop's
// order: a subscription belongs to one fanout, whose events go either
// inline while its queue is idle or through the queue, never both at once.
// The cluster layer's subscription (SubscribeLocal) is always fed on the
// loop: its Flush reads what the round changed.

// inlineFanout is the most subscriptions an event is offered to on the
// loop itself, while the fanout's queue is idle.
const inlineFanout = 64

// fanout is the subscriptions that take the events of one group (or the
// scope-wide ones), owned by the loop. subs is append-only below its
// length: a queued delivery reads a prefix of it while the loop appends
// past it, and a compaction makes a new array, so nothing a delivery reads
// is ever written. Removed subscriptions stay in subs (closed, so an offer
// skips them) until they outnumber the live ones.
type fanout struct {
	subs       []*Subscription
	live, dead int
	q          *deliveries // nil until an event is first queued
}

func (f *fanout) add(sub *Subscription) {
	f.subs = append(f.subs, sub)
	f.live++
}

// remove counts one registered subscription gone (its reg already false).
func (f *fanout) remove() {
	f.live--
	f.dead++
	switch {
	case f.live == 0:
		f.subs, f.dead = nil, 0
	case f.dead > 32 && f.dead > f.live:
		kept := make([]*Subscription, 0, f.live+f.live/4)
		for _, sub := range f.subs {
			if sub.reg {
				kept = append(kept, sub)
			}
		}
		f.subs, f.dead = kept, 0
	}
}

// each calls fn for every registered subscription (on the loop, or once
// it has stopped).
func (f *fanout) each(fn func(*Subscription)) {
	for _, sub := range f.subs {
		if sub.reg {
			fn(sub)
		}
	}
}

// offer hands ev to every subscription of f: on the loop when they are
// few and nothing of f is still queued, else through f's queue (made for
// key, a group or "" for the scope-wide fanout).
func (st *state) offer(f *fanout, key string, ev Event) {
	n := len(f.subs)
	if n <= inlineFanout && (f.q == nil || f.q.idle()) {
		for _, sub := range f.subs {
			sub.offer(ev)
		}
		return
	}
	if f.q == nil {
		f.q = st.queues.make(key)
	}
	f.q.push(delivery{ev: ev, subs: f.subs[:n:n]})
}

// delivery is one event and the subscriptions it goes to, as registered
// when the loop raised it.
type delivery struct {
	ev   Event
	subs []*Subscription
}

// deliveries is a fanout's queue of events, drained in order by one
// goroutine at a time, started when the queue fills from empty.
type deliveries struct {
	queued    atomic.Uint64 // events pushed (by the loop)
	delivered atomic.Uint64 // events offered to all their subscriptions

	mu    sync.Mutex
	items []delivery
	busy  bool          // items pending, or one being offered
	wake  chan struct{} // closed at the next delivery; made by a waiter
}

func (d *deliveries) idle() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.busy
}

func (d *deliveries) push(it delivery) {
	d.mu.Lock()
	d.items = append(d.items, it)
	d.queued.Add(1)
	start := !d.busy
	d.busy = true
	d.mu.Unlock()
	if start {
		go d.run()
	}
}

// run offers the queued events in order until none is left. Offers never
// block (a full buffer drops and counts), so it always ends.
func (d *deliveries) run() {
	for {
		d.mu.Lock()
		if len(d.items) == 0 {
			d.busy = false
			d.items = nil
			d.mu.Unlock()
			return
		}
		it := d.items[0]
		d.items[0] = delivery{}
		d.items = d.items[1:]
		d.mu.Unlock()
		for _, sub := range it.subs {
			sub.offer(it.ev)
		}
		d.mu.Lock()
		d.delivered.Add(1)
		if d.wake != nil {
			close(d.wake)
			d.wake = nil
		}
		d.mu.Unlock()
	}
}

// wait returns once the first n events pushed are delivered, or with
// ctx's error.
func (d *deliveries) wait(ctx context.Context, n uint64) error {
	for d.delivered.Load() < n {
		d.mu.Lock()
		if d.delivered.Load() >= n {
			d.mu.Unlock()
			return nil
		}
		if d.wake == nil {
			d.wake = make(chan struct{})
		}
		ch := d.wake
		d.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// queues are the fanouts' delivery queues as callers find them: the one
// part of state read off the loop (by Join and Leave, once their command
// has run), so it has its own lock. n counts them, so that a scope that
// never queued anything costs a caller one atomic load.
type queues struct {
	n      atomic.Int32
	mu     sync.RWMutex
	groups map[string]*deliveries
	scope  *deliveries // the scope-wide fanout's
}

// make returns a new queue for key (a group, or "" for the scope-wide
// fanout), registered for callers to find. On the loop.
func (qs *queues) make(key string) *deliveries {
	d := &deliveries{}
	qs.mu.Lock()
	if key == "" {
		qs.scope = d
	} else {
		if qs.groups == nil {
			qs.groups = make(map[string]*deliveries)
		}
		qs.groups[key] = d
	}
	qs.mu.Unlock()
	qs.n.Add(1)
	return d
}

// drop forgets group's queue, its fanout gone (its last subscription
// ended): what it still delivers goes to ended subscriptions only. On the
// loop.
func (qs *queues) drop(group string) {
	qs.mu.Lock()
	delete(qs.groups, group)
	qs.mu.Unlock()
	qs.n.Add(-1)
}

// awaitDelivery waits until the events a Join or Leave of groups raised
// are offered to every subscriber (see the top of this file): for each of
// the groups' queues and the scope-wide one, everything pushed by the time
// the caller's command returned. Only the queues of the caller's own
// groups (and the scope-wide one) are waited on.
func (s *Scope) awaitDelivery(ctx context.Context, op string, groups []string) error {
	qs := &s.st.queues
	if qs.n.Load() == 0 {
		return nil
	}
	var buf [4]*deliveries
	wait := buf[:0]
	qs.mu.RLock()
	if qs.scope != nil {
		wait = append(wait, qs.scope)
	}
	for _, g := range groups {
		if d := qs.groups[g]; d != nil {
			wait = append(wait, d)
		}
	}
	qs.mu.RUnlock()
	for _, d := range wait {
		if err := d.wait(ctx, d.queued.Load()); err != nil {
			return fmt.Errorf("pg scope %s: %s: %w: %w", s.id, op, ErrCallerGone, err)
		}
	}
	return nil
}
