package remote

import (
	"container/heap"
	"sync"
	"time"

	"github.com/proctor-run/proctor/process"
)

// pendingReply is an ask sent to another node whose reply has not come
// back: the reply target and token the local asker gave, under the wire
// token the envelope carries.
type pendingReply struct {
	token    uint64 // on the wire
	peer     string // the only node whose Reply may settle it
	target   process.ReplyTarget
	tok      uint64 // the target's own token
	deadline time.Time
	index    int // in the deadline heap
}

// pendingTable holds the asks awaiting replies from other nodes. An entry
// leaves when its reply comes, when its deadline passes (the asker has
// stopped waiting: a later reply is dropped), or when its node goes down.
// One timer, set to the earliest deadline, does the expiry.
type pendingTable struct {
	mu      sync.Mutex
	next    uint64
	byToken map[uint64]*pendingReply
	order   deadlineHeap
	timer   *time.Timer
	timerAt time.Time
	max     int
	closed  bool
	expired uint64
}

var pendingPool = sync.Pool{New: func() any { return new(pendingReply) }}

func (t *pendingTable) init(max int) {
	t.byToken = make(map[uint64]*pendingReply)
	t.max = max
	t.timer = time.AfterFunc(time.Hour, t.expire)
	t.timer.Stop()
}

// add records an ask to peer and returns its wire token (never 0).
func (t *pendingTable) add(peer string, target process.ReplyTarget, tok uint64, deadline time.Time) (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, process.ErrUnreachable
	}
	if len(t.byToken) >= t.max {
		return 0, ErrTooManyPending
	}
	t.next++
	p := pendingPool.Get().(*pendingReply)
	*p = pendingReply{token: t.next, peer: peer, target: target, tok: tok, deadline: deadline}
	t.byToken[p.token] = p
	heap.Push(&t.order, p)
	if p.index == 0 && (t.timerAt.IsZero() || deadline.Before(t.timerAt)) {
		t.timerAt = deadline
		t.timer.Reset(time.Until(deadline))
	}
	return p.token, nil
}

// take removes the ask of token if peer may settle it, and returns its
// target and the target's token.
func (t *pendingTable) take(token uint64, peer string) (process.ReplyTarget, uint64, bool) {
	t.mu.Lock()
	p := t.byToken[token]
	if p == nil || p.peer != peer {
		t.mu.Unlock()
		return nil, 0, false
	}
	t.removeLocked(p)
	t.mu.Unlock()
	target, tok := p.target, p.tok
	release(p)
	return target, tok, true
}

// drop forgets the ask of token (its message could not be sent).
func (t *pendingTable) drop(token uint64) {
	t.mu.Lock()
	p := t.byToken[token]
	if p != nil {
		t.removeLocked(p)
	}
	t.mu.Unlock()
	if p != nil {
		release(p)
	}
}

func (t *pendingTable) removeLocked(p *pendingReply) {
	delete(t.byToken, p.token)
	heap.Remove(&t.order, p.index)
}

func release(p *pendingReply) {
	*p = pendingReply{}
	pendingPool.Put(p)
}

// expire drops every ask whose deadline has passed and sets the timer for
// the next one. The askers are not settled: each waits on its own clock,
// and its own timer tells it ErrTimeout.
func (t *pendingTable) expire() {
	now := time.Now()
	var gone []*pendingReply
	t.mu.Lock()
	for len(t.order) > 0 && !t.order[0].deadline.After(now) {
		p := heap.Pop(&t.order).(*pendingReply)
		delete(t.byToken, p.token)
		gone = append(gone, p)
	}
	t.expired += uint64(len(gone))
	t.timerAt = time.Time{}
	if len(t.order) > 0 && !t.closed {
		t.timerAt = t.order[0].deadline
		t.timer.Reset(t.timerAt.Sub(now))
	}
	t.mu.Unlock()
	for _, p := range gone {
		release(p)
	}
}

// fail removes every ask to peer ("" for all) and settles it with err.
func (t *pendingTable) fail(peer string, err error) {
	var gone []*pendingReply
	t.mu.Lock()
	for _, p := range t.byToken {
		if peer == "" || p.peer == peer {
			gone = append(gone, p)
		}
	}
	for _, p := range gone {
		t.removeLocked(p)
	}
	t.mu.Unlock()
	for _, p := range gone {
		p.target.Settle(p.tok, process.PID{}, nil, err)
		release(p)
	}
}

// close refuses new asks and stops the timer.
func (t *pendingTable) close() {
	t.mu.Lock()
	t.closed = true
	t.timer.Stop()
	t.mu.Unlock()
}

func (t *pendingTable) counts() (pending int, expired uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byToken), t.expired
}

// deadlineHeap orders pending asks by deadline, earliest first.
type deadlineHeap []*pendingReply

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *deadlineHeap) Push(x any) {
	p := x.(*pendingReply)
	p.index = len(*h)
	*h = append(*h, p)
}
func (h *deadlineHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}
