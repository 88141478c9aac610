package bench

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// The physical limit of a tell: the same sender and receiver, the same
// 72-byte process.Message per send, over the two cheapest ways Go has to
// hand a value from one goroutine to another. BenchmarkTell reports them as
// its chan and ring sub-benchmarks, so the report can print our tell as a
// fraction of each from the same run.

// linkCapacity is the buffer of the channel and the ring: a mailbox chunk's
// worth, large enough that the sender rarely waits for the receiver.
const linkCapacity = 1024

// tellOverChannel sends tellMessages over a buffered channel to a goroutine
// that counts them, and returns the time until it has seen them all.
func tellOverChannel(b *testing.B) time.Duration {
	ch := make(chan process.Message, linkCapacity)
	done := make(chan struct{})
	go func() {
		var seen int64
		for range ch {
			seen++
			if seen == tellMessages {
				close(done)
			}
		}
	}()
	m := process.Message{Topic: "t", Payload: 1}
	start := time.Now()
	for j := 0; j < tellMessages; j++ {
		ch <- m
	}
	<-done
	elapsed := time.Since(start)
	close(ch)
	return elapsed
}

// spscRing is a minimal single-producer, single-consumer ring: one slot
// array, the consumer's head and the producer's tail each on its own cache
// line. The producer publishes its tail once per batch (publishEvery, and
// when the ring is full), and reads the head only when its last sight of
// it says full; the consumer drains everything published since it last
// looked and publishes its head once. A side that finds the ring full or
// empty yields instead of parking: it measures the hand-off alone, with no
// wake-up. (Published per message, the tail's line moved on every send and
// the ring ran at 14 M/s, below a channel.)
type spscRing struct {
	_        [64]byte
	head     atomic.Uint64 // next slot the consumer reads
	_        [56]byte
	tail     atomic.Uint64 // next slot the producer writes
	_        [56]byte
	seenHead uint64 // the producer's last read of head
	next     uint64 // the producer's next slot (tail, once published)
	_        [48]byte
	buf      [linkCapacity]process.Message
}

// push writes m and publishes the tail every publishEvery messages (and
// when the ring is full), so the consumer's line holding tail moves once a
// batch, not once a message; flush publishes the rest.
func (r *spscRing) push(m process.Message) {
	t := r.next
	for t-r.seenHead == linkCapacity {
		r.tail.Store(t)
		if r.seenHead = r.head.Load(); t-r.seenHead == linkCapacity {
			runtime.Gosched()
		}
	}
	r.buf[t%linkCapacity] = m
	r.next = t + 1
	if r.next%publishEvery == 0 {
		r.tail.Store(r.next)
	}
}

func (r *spscRing) flush() { r.tail.Store(r.next) }

// publishEvery is the producer's batch.
const publishEvery = 64

// tellOverRing is tellOverChannel over an spscRing. The consumer takes
// every message the producer has published since it last looked, then
// publishes its head once, as a mailbox drains a chunk.
func tellOverRing(b *testing.B) time.Duration {
	r := new(spscRing)
	done := make(chan struct{})
	go func() {
		var seen int64
		h := r.head.Load()
		for seen < tellMessages {
			t := r.tail.Load()
			if t == h {
				runtime.Gosched()
				continue
			}
			for ; h != t; h++ {
				if r.buf[h%linkCapacity].Payload == nil {
					b.Error("ring lost a payload")
				}
				r.buf[h%linkCapacity] = process.Message{}
				seen++
			}
			r.head.Store(h)
		}
		close(done)
	}()
	m := process.Message{Topic: "t", Payload: 1}
	start := time.Now()
	for j := 0; j < tellMessages; j++ {
		r.push(m)
	}
	r.flush()
	<-done
	return time.Since(start)
}

// benchLink runs one of the links b.N times and reports its rate.
func benchLink(b *testing.B, link func(*testing.B) time.Duration) {
	var total time.Duration
	for i := 0; i < b.N; i++ {
		total += link(b)
	}
	b.ReportMetric(float64(tellMessages)*float64(b.N)/total.Seconds(), "msgs/s")
}
