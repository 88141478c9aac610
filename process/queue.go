package process

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/proctor-run/proctor/value"
)

// queue is a multi-producer, single-consumer FIFO built from fixed-size
// chunks. Producers serialise on a mutex to append (a single sender pays an
// uncontended lock); the consumer pops without any lock, reading the slots
// that the producers' count (pushed) has published. Chunks never move, so a
// burst does not copy what is queued, and emptied chunks are recycled. A
// queue that has drained gives its last chunk back (trim), so an idle
// process holds no buffer at all.
//
// What a message costs is mostly cache lines crossing between the
// producer's core and the consumer's, so each side writes only its own:
// the consumer reads the producers' count once per run of published slots,
// not once per slot; it never writes a slot it pops (it clears a chunk's
// slots in one pass, when it is done with the chunk or about to wait); and
// a producer that takes a recycled chunk clears it first, so that the
// lines it then fills are already its own (see newChunk).
type queue[T any] struct {
	mu     sync.Mutex
	tail   *chunk[T] // guarded by mu
	tailN  int32     // slots of tail written; guarded by mu
	closed bool      // guarded by mu
	limit  int64     // guarded by mu; 0 = unbounded (popPaced reads a mailbox's, fixed at spawn)

	pushed atomic.Int64             // written under mu
	hw     atomic.Int64             // high-water mark (see mark); written under mu
	first  atomic.Pointer[chunk[T]] // set by a producer that found no chunk

	// The consumer's fields sit on their own cache line, so its progress
	// does not invalidate the line producers write on every push. Where
	// the queue's own address is known, so is the rest: a process's
	// mailbox places its producer fields and its consumer fields in two
	// different aligned 128-byte pairs of lines (see process).
	_ [64]byte

	// consumer-owned
	popped atomic.Int64
	head   *chunk[T]
	pos    int8  // next slot of head to pop (chunkSize fits)
	clean  int8  // slots of head below this are popped and cleared
	short  int8  // refills in a row, up to paceAfter, that found fewer than paceRun items (popPaced)
	ready  int32 // published slots not yet popped, as pushed last said
}

const chunkSize = 64

type chunk[T any] struct {
	slots [chunkSize]T
	used  int32 // slots handed out; guarded by the queue's mu
	next  atomic.Pointer[chunk[T]]
}

var (
	envelopeChunks sync.Pool
	eventChunks    sync.Pool
	taskChunks     sync.Pool
)

// otherChunks holds the pools of the other types' chunks (Queue's), by
// the type: a queue that drains gives its chunk back, and the next push
// takes it again, so a queue that empties after every item (a request
// and its answer) allocates nothing.
var otherChunks sync.Map // a nil *chunk[T] -> *sync.Pool

// chunkPool returns the pool that recycles chunks of T.
func chunkPool[T any]() *sync.Pool {
	var zero T
	switch any(zero).(type) {
	case envelope:
		return &envelopeChunks
	case Event:
		return &eventChunks
	case task:
		return &taskChunks
	}
	key := any((*chunk[T])(nil))
	if p, ok := otherChunks.Load(key); ok {
		return p.(*sync.Pool)
	}
	p, _ := otherChunks.LoadOrStore(key, new(sync.Pool))
	return p.(*sync.Pool)
}

// chunks returns the pool that recycles q's chunks.
func (q *queue[T]) chunks() *sync.Pool { return chunkPool[T]() }

// newChunk returns an empty chunk; a producer calls it. burst says the
// queue is filling a chunk after another.
func newChunk[T any](p *sync.Pool, burst bool) *chunk[T] {
	if p != nil {
		if c, ok := p.Get().(*chunk[T]); ok {
			// The consumer that recycled c cleared it, so its lines sit in
			// that core's cache. In a burst, clearing it again here claims
			// them all in one pass, whose misses overlap; otherwise each
			// push would wait for its slot's line on its own. A queue that
			// had drained (a request and its answer, a frame at a time)
			// writes a slot or two before it drains again: claiming the
			// whole chunk would cost more than it saves.
			if burst {
				clear(c.slots[:])
			}
			return c
		}
	}
	return new(chunk[T])
}

// recycle clears a chunk no producer holds and pools it in p.
func recycle[T any](c *chunk[T], p *sync.Pool) {
	clear(c.slots[:c.used])
	c.used = 0
	c.next.Store(nil)
	if p != nil {
		p.Put(c)
	}
}

// push appends v. It fails when the queue is closed or at its limit.
func (q *queue[T]) push(v *T) (ok bool, full bool) { return q.pushOver(v, false) }

// pushOver is push; with over, past the limit (only a closed queue
// refuses it).
func (q *queue[T]) pushOver(v *T, over bool) (ok bool, full bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false, false
	}
	pushed := q.pushed.Load()
	if q.limit > 0 && !over {
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
		t = newChunk[T](q.chunks(), false)
		q.tail, q.tailN = t, 0
		q.first.Store(t)
	} else if q.tailN == chunkSize {
		// Reading the consumer's count costs a cache-line transfer while it
		// is popping: an unbounded queue samples its depth only here, once
		// per chunk, so its mark is within chunkSize of the true one.
		q.mark(pushed + 1 - q.popped.Load())
		nt := newChunk[T](q.chunks(), true)
		t.next.Store(nt)
		q.tail, q.tailN = nt, 0
		t = nt
	}
	t.slots[q.tailN] = *v
	q.tailN++
	t.used = q.tailN
	q.pushed.Store(pushed + 1)
	q.mu.Unlock()
	return true, false
}

// pop takes the next item; only the consumer may call it.
func (q *queue[T]) pop() (T, bool) {
	n := q.popped.Load()
	if q.ready == 0 {
		if q.ready = int32(min(q.pushed.Load()-n, math.MaxInt32)); q.ready == 0 {
			q.short = 0
			var zero T
			return zero, false
		}
		if q.ready >= paceRun {
			q.short = 0
		} else if q.short < paceAfter {
			q.short++
		}
	}
	// Slot n is published: its chunk is linked (first, or the previous
	// chunk's next) before pushed counts it.
	h := q.head
	if h == nil {
		h = q.first.Load()
		q.head, q.pos, q.clean = h, 0, 0
	}
	if q.pos == chunkSize {
		next := h.next.Load()
		// No producer holds h any more: the tail has moved on to next.
		recycle(h, q.chunks())
		h = next
		q.head, q.pos, q.clean = h, 0, 0
	}
	// The slot keeps v until the chunk is cleared (recycle, trim): a write
	// here would make the consumer wait, on every pop, for the line the
	// producer just wrote to become its own.
	v := h.slots[q.pos]
	q.pos++
	q.ready--
	// A plain store to the consumer's own line: it costs a transfer only
	// when someone reads the length.
	q.popped.Store(n + 1)
	return v, true
}

// popPaced is pop for a consumer that keeps up with a stream of items (a
// Behavior's dispatcher): once its last refills found only a few items
// each, it waits, up to a few microseconds, for a chunk's worth to be
// published before it goes on.
//
// A consumer that keeps up with its producer reads the producers' count
// every two or three items, and each read takes away from the producer
// the line it writes on every push; each slot it reads right behind the
// producer takes away the line the producer is filling. The producer's
// next fenced write then waits for its line to come back. Go tell ran at
// 22–26 M msgs/s in the runs where this happened (the receiver looked
// 700,000–850,000 times for 2,000,000 messages) and at 40–45 in those
// where it did not (100,000–200,000), the sender being the slower side in
// both. Waiting lets the producer fill whole chunks that the consumer then
// reads, with the count, once per chunk.
//
// Each of the wait's slices yields first (runtime.Gosched): goroutines
// queued behind the dispatcher run meanwhile — a pool's other routees,
// say, that share its core — and what is left of the slice spins. A
// pure spin held the core from them: a round-robin pool of four ran
// slower than before.
//
// Only a stream waits: a refill that finds nothing (the consumer is about
// to go idle, or to hand its core to the goroutine it just answered) or a
// chunk's worth starts the count of short refills over, and it takes
// paceAfter short ones in a row, so a request and its answer, which
// alternate one item and none, never wait. A wait that found only a few
// items says the producer is slow: it starts the count over too, so a
// process that receives a trickle goes idle as before instead of spinning
// from one item to the next.
//
// A bounded queue never waits: its producers would find it full while its
// consumer waited for items it could never hold, and get errors that a
// consumer keeping up never gave them. The consumer reads the limit
// without the lock, so popPaced is only for a queue whose limit is set
// before its consumer starts and never changes (a mailbox: SpawnOptions).
func (q *queue[T]) popPaced() (T, bool) {
	if q.ready == 0 && q.short >= paceAfter && q.limit == 0 {
		n := q.popped.Load()
		for i := 0; i < paceSlices; i++ {
			runtime.Gosched()
			pace()
			if whilePacing != nil {
				whilePacing()
			}
			if q.pushed.Load()-n >= paceRun {
				break
			}
		}
		if q.pushed.Load()-n < paceRun/4 {
			q.short = 0
		}
	}
	return q.pop()
}

// whilePacing, set only by tests, runs after each of popPaced's spins.
var whilePacing func()

const (
	paceRun    = chunkSize // a refill that finds fewer items is short
	paceAfter  = 2         // short refills in a row before popPaced waits
	paceSlices = 6         // popPaced's slices of waiting, each ending with a look
	paceSpins  = 1000      // pace's rounds: about 0.5 µs on a 3 GHz core
)

// pace spins for a while without touching memory that another core may
// write (a slice of popPaced's wait).
//
//go:noinline
func pace() {
	x := 1
	for i := 0; i < paceSpins; i++ {
		x = x*3 + i
	}
	runtime.KeepAlive(x) // the loop's work is its result
}

// trim gives back the last chunk when everything in it was consumed, and
// otherwise clears the slots already popped from it, so that nothing a
// waiting consumer has handled stays reachable through its queue. Only the
// consumer may call it, when it is about to wait.
func (q *queue[T]) trim() {
	h := q.head
	if h == nil {
		return
	}
	q.mu.Lock()
	if q.tail == h && int32(q.pos) == q.tailN {
		q.tail, q.tailN = nil, 0
		q.first.Store(nil)
		q.head, q.pos, q.clean = nil, 0, 0
		q.mu.Unlock()
		recycle(h, q.chunks())
		return
	}
	q.mu.Unlock()
	// Producers write only slots at or past pos: these are the consumer's.
	clear(h.slots[q.clean:q.pos])
	q.clean = q.pos
}

// rewind is trim for a queue that keeps its chunk (a Loop's: there are
// few, and each round trip into one would otherwise take a chunk from the
// pool, clear all of it, and give it back): once everything was consumed,
// the next push writes the first slot of the same chunk again. Only the
// consumer may call it, when it is about to wait.
func (q *queue[T]) rewind() {
	h := q.head
	if h == nil {
		return
	}
	// Producers write only slots at or past pos: these are the consumer's.
	clear(h.slots[q.clean:q.pos])
	q.clean = q.pos
	q.mu.Lock()
	if q.tail == h && int32(q.pos) == q.tailN {
		q.tailN, h.used = 0, 0
		q.pos, q.clean = 0, 0
	}
	q.mu.Unlock()
}

// trimQueues trims the process's mailbox and event queue (queue.trim):
// a popped slot keeps its item until then, and an event holds its exit
// reason — a script's error of megabytes, for a supervisor whose children
// crash with them. Only the process's own goroutine may call it, when it
// is about to wait.
func (p *process) trimQueues() {
	p.mb.trim()
	if x := p.ext.Load(); x != nil {
		x.events.trim()
	}
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

// Queue is the queue of mailboxes and loops for the single-writer loops of
// other packages (a connection's writer, a membership loop, an in-memory
// network's direction): any goroutine pushes, one goroutine (the
// consumer) pops, and the consumer that found it empty waits on Ready.
// It is unbounded unless a limit is set. A queue that has drained holds no
// buffer. The zero value is not usable: make one with NewQueue.
type Queue[T any] struct {
	q       queue[T]
	waiting atomic.Bool // the consumer armed Ready and may be waiting
	wake    chan struct{}
}

// ErrQueueClosed: a push to a queue that was closed.
var ErrQueueClosed = value.Sentinel("process.queue_closed", value.KindStopped, "queue closed")

// NewQueue returns an empty queue that holds at most limit items (0: no
// bound).
func NewQueue[T any](limit int) *Queue[T] {
	q := &Queue[T]{wake: make(chan struct{}, 1)}
	q.q.setLimit(limit)
	return q
}

// Push appends v: ErrQueueFull at the limit, ErrQueueClosed once closed.
func (q *Queue[T]) Push(v T) error {
	ok, full := q.q.push(&v)
	if !ok {
		if full {
			return ErrQueueFull
		}
		return ErrQueueClosed
	}
	q.wakeUp()
	return nil
}

// PushOver appends v past the limit, for what must not be refused (a
// report that a node is down); it fails only once the queue is closed.
func (q *Queue[T]) PushOver(v T) error {
	if ok, _ := q.q.pushOver(&v, true); !ok {
		return ErrQueueClosed
	}
	q.wakeUp()
	return nil
}

func (q *Queue[T]) wakeUp() {
	if q.waiting.Load() && q.waiting.CompareAndSwap(true, false) {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// Pop takes the next item; only the consumer may call it.
func (q *Queue[T]) Pop() (T, bool) { return q.q.pop() }

// Ready is for the consumer that found the queue empty and is about to
// wait: it gives back the drained buffer and returns a channel that
// receives once an item may have been pushed (already, when one was
// pushed since the Pop). A wake-up may find nothing: Pop again, and call
// Ready again before the next wait.
func (q *Queue[T]) Ready() <-chan struct{} {
	q.q.trim()
	q.waiting.Store(true)
	if q.q.len() > 0 && q.waiting.CompareAndSwap(true, false) {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return q.wake
}

// Len returns the number of items pushed and not yet popped.
func (q *Queue[T]) Len() int { return q.q.len() }

// HighWater is the most items seen waiting at once (exact for a bounded
// queue, sampled once per 64 pushes for an unbounded one).
func (q *Queue[T]) HighWater() int { return q.q.highWater() }

// SetLimit changes the bound; 0 means unbounded.
func (q *Queue[T]) SetLimit(n int) { q.q.setLimit(n) }

// Close refuses further pushes; what is queued stays for the consumer.
func (q *Queue[T]) Close() { q.q.close() }
