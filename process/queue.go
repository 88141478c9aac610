package process

import (
	"sync"
	"sync/atomic"
)

// queue is a multi-producer, single-consumer FIFO built from fixed-size
// chunks. Producers serialise on a mutex to append (a single sender pays an
// uncontended lock); the consumer pops without any lock, reading slots that
// the chunk's atomic count has published. Chunks never move, so a burst
// does not copy what is queued, and emptied chunks are recycled. A queue
// that has drained gives its last chunk back (trim), so an idle process
// holds no buffer at all.
type queue[T any] struct {
	mu     sync.Mutex
	tail   *chunk[T] // guarded by mu
	tailN  int32     // slots of tail written; guarded by mu
	closed bool      // guarded by mu
	limit  int64     // guarded by mu; 0 = unbounded

	pushed atomic.Int64             // written under mu
	hw     atomic.Int64             // high-water mark (see mark); written under mu
	first  atomic.Pointer[chunk[T]] // set by a producer that found no chunk

	// The consumer's fields sit on their own cache line, so its progress
	// does not invalidate the line producers write on every push.
	_ [64]byte

	// consumer-owned
	popped atomic.Int64
	head   *chunk[T]
	pos    int32
}

const chunkSize = 64

// A slot carries its own ready flag, written by the producer right after
// the value, in the same cache line: the consumer learns that a message is
// there from the line it must fetch anyway, so no shared counter bounces
// between the cores on every message.
type slot[T any] struct {
	v     T
	ready atomic.Bool
}

type chunk[T any] struct {
	slots [chunkSize]slot[T]
	used  int32 // slots handed out; guarded by the queue's mu
	next  atomic.Pointer[chunk[T]]
}

var (
	envelopeChunks sync.Pool
	eventChunks    sync.Pool
	funcChunks     sync.Pool
)

// chunkPool returns the pool that recycles chunks of T.
func chunkPool[T any]() *sync.Pool {
	var zero T
	switch any(zero).(type) {
	case envelope:
		return &envelopeChunks
	case Event:
		return &eventChunks
	case func():
		return &funcChunks
	}
	return nil
}

func newChunk[T any]() *chunk[T] {
	if p := chunkPool[T](); p != nil {
		if c, ok := p.Get().(*chunk[T]); ok {
			return c
		}
	}
	return new(chunk[T])
}

// recycle clears a chunk no producer holds and pools it.
func recycle[T any](c *chunk[T]) {
	clear(c.slots[:c.used])
	c.used = 0
	c.next.Store(nil)
	if p := chunkPool[T](); p != nil {
		p.Put(c)
	}
}

// push appends v. It fails when the queue is closed or at its limit.
func (q *queue[T]) push(v *T) (ok bool, full bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false, false
	}
	pushed := q.pushed.Load()
	if q.limit > 0 {
		// A bounded queue reads the consumer's count anyway: its mark is exact.
		depth := pushed - q.popped.Load()
		if depth >= q.limit {
			q.mu.Unlock()
			return false, true
		}
		q.mark(depth + 1)
	}
	t := q.tail
	if t == nil {
		t = newChunk[T]()
		q.tail, q.tailN = t, 0
		q.first.Store(t)
	} else if q.tailN == chunkSize {
		// Reading the consumer's count costs a cache-line transfer while it
		// is popping: an unbounded queue samples its depth only here, once
		// per chunk, so its mark is within chunkSize of the true one.
		q.mark(pushed + 1 - q.popped.Load())
		nt := newChunk[T]()
		t.next.Store(nt)
		q.tail, q.tailN = nt, 0
		t = nt
	}
	s := &t.slots[q.tailN]
	q.tailN++
	t.used = q.tailN
	s.v = *v
	s.ready.Store(true)
	q.pushed.Store(pushed + 1)
	q.mu.Unlock()
	return true, false
}

// pop takes the next item; only the consumer may call it.
func (q *queue[T]) pop() (T, bool) {
	var zero T
	h := q.head
	if h == nil {
		if h = q.first.Load(); h == nil {
			return zero, false
		}
		q.head, q.pos = h, 0
	}
	if q.pos == chunkSize {
		next := h.next.Load()
		if next == nil {
			return zero, false
		}
		// No producer holds h any more: the tail has moved on to next.
		recycle(h)
		h = next
		q.head, q.pos = h, 0
	}
	s := &h.slots[q.pos]
	if !s.ready.Load() {
		return zero, false
	}
	v := s.v
	// The slot stays in its chunk until the chunk is recycled: clear it,
	// or what it carried (a message, a command and all it captured) stays
	// reachable long after it was handled.
	s.v = zero
	q.pos++
	// A plain store to the consumer's own line: it costs a transfer only
	// when someone reads the length.
	q.popped.Store(q.popped.Load() + 1)
	return v, true
}

// trim gives back the last chunk when everything in it was consumed; only
// the consumer may call it, when it is about to go idle.
func (q *queue[T]) trim() {
	h := q.head
	if h == nil {
		return
	}
	q.mu.Lock()
	if q.tail == h && q.pos == q.tailN {
		q.tail, q.tailN = nil, 0
		q.first.Store(nil)
		q.head, q.pos = nil, 0
		q.mu.Unlock()
		recycle(h)
		return
	}
	q.mu.Unlock()
}

// mark raises the high-water mark to depth; q.mu must be held.
func (q *queue[T]) mark(depth int64) {
	if depth > q.hw.Load() {
		q.hw.Store(depth)
	}
}

// highWater is the most items seen waiting at once: exact for a bounded
// queue, sampled once per chunk of pushes for an unbounded one.
func (q *queue[T]) highWater() int { return int(q.hw.Load()) }

// len is the number of items pushed and not yet popped.
func (q *queue[T]) len() int { return int(q.pushed.Load() - q.popped.Load()) }

// setLimit changes the bound; 0 means unbounded.
func (q *queue[T]) setLimit(n int) {
	q.mu.Lock()
	q.limit = int64(n)
	q.mu.Unlock()
}

// close refuses further pushes. What is queued stays for the consumer (or
// the garbage collector).
func (q *queue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}
