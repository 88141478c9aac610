package process

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// Queue keeps each producer's order, refuses past its limit unless told
// not to, and refuses everything once closed, keeping what it holds.
func TestQueueOrderLimitClose(t *testing.T) {
	const producers, each = 4, 1000
	q := NewQueue[[2]int](0)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := q.Push([2]int{p, i}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	next := make([]int, producers)
	deadline := time.After(20 * time.Second)
	for got := 0; got < producers*each; {
		v, ok := q.Pop()
		if !ok {
			select {
			case <-q.Ready():
			case <-deadline:
				t.Fatalf("only %d items arrived", got)
			}
			continue
		}
		if v[1] != next[v[0]] {
			t.Fatalf("producer %d: item %d after %d", v[0], v[1], next[v[0]]-1)
		}
		next[v[0]]++
		got++
	}
	wg.Wait()

	b := NewQueue[string](2)
	for _, s := range []string{"a", "b"} {
		if err := b.Push(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Push("c"); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("past the limit: %v", err)
	}
	if err := b.PushOver("report"); err != nil {
		t.Fatalf("PushOver past the limit: %v", err)
	}
	if b.Len() != 3 || b.HighWater() != 2 {
		t.Fatalf("len %d, high water %d", b.Len(), b.HighWater())
	}
	b.Close()
	if err := b.Push("d"); !errors.Is(err, ErrQueueClosed) {
		t.Fatalf("closed: %v", err)
	}
	if err := b.PushOver("d"); !errors.Is(err, ErrQueueClosed) {
		t.Fatalf("closed, over: %v", err)
	}
	for _, want := range []string{"a", "b", "report"} {
		if v, ok := b.Pop(); !ok || v != want {
			t.Fatalf("popped %q, %v; want %q", v, ok, want)
		}
	}
}

// A consumer that waits on Ready is woken by the next push, also one made
// between its empty Pop and Ready.
func TestQueueReadyWakes(t *testing.T) {
	q := NewQueue[int](0)
	if _, ok := q.Pop(); ok {
		t.Fatal("popped from an empty queue")
	}
	_ = q.Push(1) // between the Pop and Ready
	select {
	case <-q.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("a push before Ready did not wake")
	}
	if v, ok := q.Pop(); !ok || v != 1 {
		t.Fatalf("popped %d, %v", v, ok)
	}
	ready := q.Ready()
	go func() { _ = q.Push(2) }()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("a push after Ready did not wake")
	}
	if v, ok := q.Pop(); !ok || v != 2 {
		t.Fatalf("popped %d, %v", v, ok)
	}
}

// A queue of another type than the core's recycles its chunks too: one
// that drains after every item allocates nothing once warm.
func TestQueueRecyclesChunks(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	type frame struct{ b []byte }
	q := NewQueue[frame](0)
	f := frame{b: []byte("x")}
	round := func() {
		_ = q.Push(f)
		q.Pop()
		q.Ready() // drained: the chunk goes back
	}
	round()
	if n := testing.AllocsPerRun(100, round); n > 0 {
		t.Fatalf("%v allocations per item", n)
	}
}
