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
// array, the producer's tail and the consumer's head each on its own cache
// line, and each side's last sight of the other's index cached on its own
// line, so a side reads the shared index only when its cached one says
// full or empty. A side that finds it full (producer) or empty (consumer)
// yields instead of parking: it measures the hand-off alone, with no wake-up.
type spscRing struct {
	_        [64]byte
	head     atomic.Uint64 // next slot the consumer reads
	_        [56]byte
	tail     atomic.Uint64 // next slot the producer writes
	_        [56]byte
	seenHead uint64 // the producer's last read of head
	_        [56]byte
	seenTail uint64 // the consumer's last read of tail
	_        [56]byte
	buf      [linkCapacity]process.Message
}

func (r *spscRing) push(m process.Message) {
	t := r.tail.Load()
	for t-r.seenHead == linkCapacity {
		if r.seenHead = r.head.Load(); t-r.seenHead == linkCapacity {
			runtime.Gosched()
		}
	}
	r.buf[t%linkCapacity] = m
	r.tail.Store(t + 1)
}

func (r *spscRing) pop() process.Message {
	h := r.head.Load()
	for r.seenTail == h {
		if r.seenTail = r.tail.Load(); r.seenTail == h {
			runtime.Gosched()
		}
	}
	m := r.buf[h%linkCapacity]
	r.buf[h%linkCapacity] = process.Message{}
	r.head.Store(h + 1)
	return m
}

// tellOverRing is tellOverChannel over an spscRing.
func tellOverRing(b *testing.B) time.Duration {
	r := new(spscRing)
	done := make(chan struct{})
	go func() {
		for seen := int64(0); seen < tellMessages; seen++ {
			if m := r.pop(); m.Payload == nil {
				b.Error("ring lost a payload")
			}
		}
		close(done)
	}()
	m := process.Message{Topic: "t", Payload: 1}
	start := time.Now()
	for j := 0; j < tellMessages; j++ {
		r.push(m)
	}
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
