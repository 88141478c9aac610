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
	tail   *chunk[T]    // guarded by mu
	tailN  int32        // slots of tail written; guarded by mu
	closed bool         // guarded by mu
	limit  atomic.Int64 // 0 = unbounded

	pushed atomic.Int64             // written under mu
	first  atomic.Pointer[chunk[T]] // set by a producer that found no chunk

	// The consumer's fields sit on their own cache line, so its progress
	// does not invalidate the line producers write on every push.
	_ [64]byte

	// consumer-owned
	popped atomic.Int64 // published at chunk ends, when empty, and always when bounded
	taken  int64        // popped, not yet published
	head   *chunk[T]
	pos    int32
	avail  int32 // slots of head known to be published
}

const chunkSize = 64

type chunk[T any] struct {
	slots [chunkSize]T
	n     atomic.Int32 // slots published
	next  atomic.Pointer[chunk[T]]
}

var (
	messageChunks sync.Pool
	eventChunks   sync.Pool
	funcChunks    sync.Pool
)

// chunkPool returns the pool that recycles chunks of T.
func chunkPool[T any]() *sync.Pool {
	var zero T
	switch any(zero).(type) {
	case Message:
		return &messageChunks
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
	clear(c.slots[:c.n.Load()])
	c.n.Store(0)
	c.next.Store(nil)
	if p := chunkPool[T](); p != nil {
		p.Put(c)
	}
}

// push appends v. It fails when the queue is closed or at its limit.
func (q *queue[T]) push(v T) (ok bool, full bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false, false
	}
	pushed := q.pushed.Load()
	if lim := q.limit.Load(); lim > 0 && pushed-q.popped.Load() >= lim {
		q.mu.Unlock()
		return false, true
	}
	t := q.tail
	if t == nil {
		t = newChunk[T]()
		q.tail, q.tailN = t, 0
		q.first.Store(t)
	} else if q.tailN == chunkSize {
		nt := newChunk[T]()
		t.next.Store(nt)
		q.tail, q.tailN = nt, 0
		t = nt
	}
	t.slots[q.tailN] = v
	q.tailN++
	t.n.Store(q.tailN)
	q.pushed.Store(pushed + 1)
	q.mu.Unlock()
	return true, false
}

// pop takes the next item; only the consumer may call it.
func (q *queue[T]) pop() (T, bool) {
	var zero T
	h := q.head
	if q.pos == q.avail {
		if h == nil {
			if h = q.first.Load(); h == nil {
				return zero, false
			}
			q.head, q.pos = h, 0
		}
		if q.pos == chunkSize {
			next := h.next.Load()
			if next == nil {
				q.publish()
				return zero, false
			}
			// No producer holds h any more: the tail has moved on to next.
			recycle(h)
			h = next
			q.head, q.pos = h, 0
		}
		q.avail = h.n.Load()
		if q.pos == q.avail {
			q.publish()
			return zero, false
		}
	}
	// The slot is not cleared here: writing it would steal the cache line
	// that a producer is filling with the next slots. Chunks are cleared
	// whole when recycled, so a consumed payload is held for at most one
	// chunk's worth of messages, or until the queue drains.
	v := h.slots[q.pos]
	q.pos++
	q.taken++
	if q.pos == q.avail || q.limit.Load() > 0 {
		q.publish()
	}
	return v, true
}

// publish makes the consumer's progress visible to len and to the limit.
func (q *queue[T]) publish() {
	if q.taken != 0 {
		q.popped.Store(q.popped.Load() + q.taken)
		q.taken = 0
	}
}

// trim gives back the last chunk when everything in it was consumed; only
// the consumer may call it, when it is about to go idle.
func (q *queue[T]) trim() {
	h := q.head
	if h == nil {
		return
	}
	q.mu.Lock()
	if q.tail == h && q.pos == h.n.Load() {
		q.tail, q.tailN = nil, 0
		q.first.Store(nil)
		q.head, q.pos, q.avail = nil, 0, 0
		q.mu.Unlock()
		recycle(h)
		return
	}
	q.mu.Unlock()
}

// len is the number of items pushed and not yet popped.
func (q *queue[T]) len() int { return int(q.pushed.Load() - q.popped.Load()) }

// setLimit changes the bound; 0 means unbounded.
func (q *queue[T]) setLimit(n int) {
	q.limit.Store(int64(n))
}

// close refuses further pushes. What is queued stays for the consumer (or
// the garbage collector).
func (q *queue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}
