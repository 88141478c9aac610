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
func BenchmarkQueueMessage(b *testing.B) {
	benchQueue(b, envelope{meta: &meta{topic: "t"}, payload: 1})
}

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

// A popped value must not stay reachable through its queue once the
// consumer has moved on: past its chunk (recycled), or to waiting (trim, which
// Proc.Arm, an idle dispatcher and an idle Loop call).
func TestQueueReleasesPopped(t *testing.T) {
	tests := []struct {
		name  string
		after func(q *queue[Message])
	}{
		{"trim with mail still queued", func(q *queue[Message]) {
			q.push(&Message{Payload: "next"})
			q.trim()
		}},
		{"trim of a drained queue", func(q *queue[Message]) { q.trim() }},
		{"the consumer passed the chunk", func(q *queue[Message]) {
			for i := 0; i < chunkSize+1; i++ {
				q.push(&Message{Payload: i})
				if _, ok := q.pop(); !ok {
					t.Fatal("pop")
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q queue[Message]
			big := new([1 << 20]byte)
			w := weak.Make(big)
			q.push(&Message{Payload: big})
			if m, ok := q.pop(); !ok || m.Payload.(*[1 << 20]byte) != big {
				t.Fatal("pop")
			}
			big = nil
			tt.after(&q)
			runtime.GC()
			if w.Value() != nil {
				t.Fatal("the popped value is still reachable through its queue")
			}
			runtime.KeepAlive(&q)
		})
	}
}

// Several producers against one consumer that trims whenever it finds the
// queue empty: every item arrives once, each producer's in its order.
func TestQueueConcurrentProducers(t *testing.T) {
	const producers, each = 4, 20_000
	var q queue[[2]int]
	for p := 0; p < producers; p++ {
		go func() {
			for i := 0; i < each; i++ {
				v := [2]int{p, i}
				q.push(&v)
			}
		}()
	}
	next := make([]int, producers)
	deadline := time.Now().Add(time.Minute)
	for got := 0; got < producers*each; {
		v, ok := q.pop()
		if !ok {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d items after a minute", got, producers*each)
			}
			q.trim()
			runtime.Gosched()
			continue
		}
		if v[1] != next[v[0]] {
			t.Fatalf("producer %d: got item %d, want %d", v[0], v[1], next[v[0]])
		}
		next[v[0]]++
		got++
	}
	if _, ok := q.pop(); ok || q.len() != 0 {
		t.Fatalf("extra items: len %d", q.len())
	}
}
