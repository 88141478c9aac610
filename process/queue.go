package process

import (
	"sync"
	"sync/atomic"
)

// queue is an unbounded (or limited) multi-producer, single-consumer FIFO.
// Producers append under a mutex; the consumer swaps the whole input slice
// out in one critical section and then pops from it without locking, so the
// lock is taken once per batch on the consumer side and contention stays
// low under load. No allocation happens per item once the buffers have
// grown.
type queue[T any] struct {
	mu     sync.Mutex
	in     []T
	closed bool
	limit  int // 0 = unbounded; guarded by mu

	inLen   atomic.Int64 // len(in), stored under mu
	outLeft atomic.Int64 // items the consumer holds but has not popped

	// consumer-owned
	out []T
	pos int
}

// maxKeptCap bounds the buffer capacity kept after a burst, so one spike
// does not pin memory for the life of the process.
const maxKeptCap = 4096

// push appends v. It fails when the queue is closed or at its limit.
func (q *queue[T]) push(v T) (ok bool, full bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false, false
	}
	if q.limit > 0 && len(q.in)+int(q.outLeft.Load()) >= q.limit {
		q.mu.Unlock()
		return false, true
	}
	q.in = append(q.in, v)
	q.inLen.Store(int64(len(q.in)))
	q.mu.Unlock()
	return true, false
}

// pop takes the next item; only the consumer may call it.
func (q *queue[T]) pop() (T, bool) {
	var zero T
	if q.pos == len(q.out) && !q.refill() {
		return zero, false
	}
	v := q.out[q.pos]
	q.out[q.pos] = zero
	q.pos++
	q.outLeft.Store(int64(len(q.out) - q.pos))
	return v, true
}

func (q *queue[T]) refill() bool {
	if q.inLen.Load() == 0 {
		return false
	}
	spent := q.out[:0]
	if cap(spent) > maxKeptCap {
		spent = nil
	}
	q.mu.Lock()
	q.out, q.in = q.in, spent
	q.inLen.Store(0)
	q.outLeft.Store(int64(len(q.out)))
	q.mu.Unlock()
	q.pos = 0
	return len(q.out) > 0
}

// len is the number of items pushed and not yet popped.
func (q *queue[T]) len() int { return int(q.inLen.Load() + q.outLeft.Load()) }

// setLimit changes the bound; 0 means unbounded.
func (q *queue[T]) setLimit(n int) {
	q.mu.Lock()
	q.limit = n
	q.mu.Unlock()
}

// close refuses further pushes and returns what was never popped.
func (q *queue[T]) close() []T {
	q.mu.Lock()
	q.closed = true
	rest := q.in
	q.in = nil
	q.inLen.Store(0)
	q.mu.Unlock()
	return rest
}
