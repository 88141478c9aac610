package process

import (
	"runtime"
	"testing"
	"time"
	"weak"
)

func benchQueue[T any](b *testing.B, v T) {
	const n = 2_000_000
	var total time.Duration
	for i := 0; i < b.N; i++ {
		var q queue[T]
		done := make(chan struct{})
		go func() {
			got := 0
			for got < n {
				if _, ok := q.pop(); ok {
					got++
				} else {
					runtime.Gosched()
				}
			}
			close(done)
		}()
		start := time.Now()
		for j := 0; j < n; j++ {
			q.push(&v)
		}
		<-done
		total += time.Since(start)
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "msgs/s")
}

// BenchmarkQueueMessage measures the mailbox alone: one producer, one
// consumer spinning on another goroutine.
func BenchmarkQueueMessage(b *testing.B) { benchQueue(b, envelope{topic: "t", payload: 1}) }

func TestQueueChunksAndTrim(t *testing.T) {
	var q queue[Message]
	const n = chunkSize*3 + 5
	for i := 0; i < n; i++ {
		q.push(&Message{Payload: i})
	}
	if q.len() != n {
		t.Fatalf("len = %d", q.len())
	}
	for i := 0; i < n; i++ {
		m, ok := q.pop()
		if !ok || m.Payload != i {
			t.Fatalf("pop %d = %v, %v", i, m.Payload, ok)
		}
		if i == chunkSize+1 {
			// Interleave: pushes while the consumer is mid-chunk.
			q.push(&Message{Payload: "late"})
			q.push(&Message{Payload: "later"})
		}
	}
	for _, want := range []string{"late", "later"} {
		if m, ok := q.pop(); !ok || m.Payload != want {
			t.Fatalf("pop = %v, %v; want %s", m.Payload, ok, want)
		}
	}
	if _, ok := q.pop(); ok || q.len() != 0 {
		t.Fatalf("queue not empty: len %d", q.len())
	}
	q.trim()
	if q.head != nil || q.tail != nil || q.first.Load() != nil {
		t.Fatal("trim kept a drained chunk")
	}
	q.push(&Message{Payload: "again"})
	if m, ok := q.pop(); !ok || m.Payload != "again" {
		t.Fatalf("after trim: %v, %v", m.Payload, ok)
	}
	q.setLimit(1)
	if ok, full := q.push(&Message{}); !ok || full {
		t.Fatal("bounded push refused below the limit")
	}
	if ok, full := q.push(&Message{}); ok || !full {
		t.Fatal("bounded push accepted past the limit")
	}
	q.pop()
	if ok, _ := q.push(&Message{}); !ok {
		t.Fatal("bounded push refused after a pop")
	}
	q.close()
	if ok, full := q.push(&Message{}); ok || full {
		t.Fatal("push into a closed queue")
	}
}

// pop clears the slot it took: the value is the consumer's alone, and the
// chunk, which lives on until it is recycled, must not keep it alive.
func TestQueuePopClearsSlot(t *testing.T) {
	var q queue[Message]
	big := new([1 << 20]byte)
	w := weak.Make(big)
	q.push(&Message{Payload: big})
	q.push(&Message{Payload: "next"}) // the chunk stays in use
	if m, ok := q.pop(); !ok || m.Payload.(*[1 << 20]byte) != big {
		t.Fatal("pop")
	}
	big = nil
	runtime.GC()
	if w.Value() != nil {
		t.Fatal("the popped value is still reachable through its slot")
	}
	runtime.KeepAlive(&q)
}
