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

// The consumer publishes its count once per run of items and per chunk,
// not per item: Len may count items it has taken while it works through a
// run, never more than a chunk's worth, and is exact once it has taken
// what it found. A bounded queue counts every pop, so that a freed place
// is free at once.
func TestQueueLenAsTheConsumerGoes(t *testing.T) {
	q := NewQueue[int](0)
	for i := range 200 {
		if err := q.Push(i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 {
		if v, ok := q.Pop(); !ok || v != i {
			t.Fatalf("pop %d = %d, %v", i, v, ok)
		}
		if l, waiting := q.Len(), 199-i; l < waiting || l > waiting+chunkSize-1 {
			t.Fatalf("after %d pops Len is %d; %d are waiting", i+1, l, waiting)
		}
	}
	if l := q.Len(); l != 0 {
		t.Fatalf("Len %d once the run is taken", l)
	}
	// A run that ends mid-chunk: exact at its end.
	for i := range 10 {
		q.Push(i)
	}
	for range 10 {
		q.Pop()
	}
	if l := q.Len(); l != 0 {
		t.Fatalf("Len %d after a run of 10", l)
	}

	b := NewQueue[int](3)
	for i := range 3 {
		if err := b.Push(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Push(3); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("push past the limit: %v", err)
	}
	if _, ok := b.Pop(); !ok {
		t.Fatal("nothing to pop")
	}
	if l := b.Len(); l != 2 {
		t.Fatalf("bounded Len %d after one pop of 3", l)
	}
	if err := b.Push(3); err != nil {
		t.Fatalf("the place the pop freed: %v", err)
	}
}
