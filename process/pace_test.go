package process

import "testing"

// popPaced waits only while its refills keep finding a few items each (a
// stream the consumer keeps up with): never for a request and its answer,
// nor after a refill that found a chunk's worth, and a wait that found
// little (a trickle) is not repeated.
func TestPopPacedWaitsOnlyInAStream(t *testing.T) {
	spins := 0
	whilePacing = func() { spins++ }
	defer func() { whilePacing = nil }()
	var q queue[envelope]
	e := envelope{payload: 1}
	push := func(n int) {
		for i := 0; i < n; i++ {
			q.push(&e)
		}
	}
	drain := func() (n int) {
		for {
			if _, ok := q.popPaced(); !ok {
				return n
			}
			n++
		}
	}
	// A request and its answer: one item, then none, again and again.
	for i := 0; i < 100; i++ {
		push(1)
		if _, ok := q.popPaced(); !ok {
			t.Fatal("lost an item")
		}
		if _, ok := q.popPaced(); ok {
			t.Fatal("popped an item never pushed")
		}
	}
	if spins != 0 {
		t.Fatalf("request/answer: popPaced spun %d times", spins)
	}
	// A stream: short refills in a row, with no empty one between.
	refill := func(n int) {
		push(n)
		for i := 0; i < n; i++ {
			if _, ok := q.popPaced(); !ok {
				t.Fatal("lost an item")
			}
		}
	}
	refill(3)
	refill(3)
	if spins != 0 {
		t.Fatalf("popPaced spun before its refills had been short twice: %d", spins)
	}
	push(3)
	if n := drain(); n != 3 {
		t.Fatalf("drained %d, want 3", n)
	}
	// The wait found only what was already there (this test pushes
	// nothing meanwhile): it ran all its slices, and the trickle it saw
	// starts the count over, so the next refill does not wait.
	if spins != paceSlices {
		t.Fatalf("a stream's wait spun %d times, want %d", spins, paceSlices)
	}
	spins = 0
	refill(3)
	refill(3)
	if spins != 0 {
		t.Fatalf("a trickle waited again: %d spins", spins)
	}
	// A producer that fills a chunk while the consumer waits ends the wait.
	whilePacing = func() {
		spins++
		if spins == 1 {
			push(paceRun)
		}
	}
	refill(3)
	if n := drain(); n != paceRun {
		t.Fatalf("drained %d, want %d", n, paceRun)
	}
	if spins != 1 {
		t.Fatalf("the wait went on for %d spins after a chunk's worth came", spins)
	}
	// A refill that found a chunk's worth starts the count over.
	spins = 0
	refill(3)
	refill(paceRun)
	refill(3)
	if spins != 0 {
		t.Fatalf("popPaced waited after a full refill: %d spins", spins)
	}
}

// A bounded mailbox never waits: its senders would find it full while its
// receiver waited for more than it can hold.
func TestPopPacedNeverWaitsOnABoundedQueue(t *testing.T) {
	spins := 0
	whilePacing = func() { spins++ }
	defer func() { whilePacing = nil }()
	var q queue[envelope]
	q.setLimit(10)
	e := envelope{payload: 1}
	for r := 0; r < 10; r++ {
		for i := 0; i < 3; i++ {
			if ok, _ := q.push(&e); !ok {
				t.Fatal("push refused below the limit")
			}
		}
		for i := 0; i < 3; i++ {
			if _, ok := q.popPaced(); !ok {
				t.Fatal("lost an item")
			}
		}
	}
	if spins != 0 {
		t.Fatalf("a bounded queue's consumer waited: %d spins", spins)
	}
}
