package process

import (
	"sync"
	"time"
)

// A goroutine process holds a goroutine only while it runs (suspend.go):
// every spawn, and every wake-up of a suspended process, starts a run.
// Starting each on a new goroutine cost more than the goroutine: its 2 KB
// stack came from the runtime's stack pool (after a collection had freed
// the free goroutines' stacks, from fresh pages), the Lua host grew it to
// 4 KB at once (a copy of the stack, runtime.copystack), and the grown
// stack was freed again when the run ended. In a million Lua spawns that
// was a sixth of the CPU.
//
// So runs go through a queue, and a worker, a goroutine that has run one,
// takes the next run from it when its own ends, on the stack it has
// already grown. A run is never left to wait for a worker that may not
// come back (a run may block for good: a Go ProcFunc in Receive): the
// queue never holds more runs than there are goroutines on their way to
// look at it (pending), each of which takes one if any is left. When a run
// is queued and there are not enough, start wakes a parked worker, or
// starts a new goroutine, as before. So no run waits longer than it did
// on a goroutine of its own, and while workers keep up with the runs
// started (a spawner and its processes on two cores), no goroutine is
// started or woken at all.
//
// A worker that finds the queue empty parks, at most maxIdleWorkers of
// them (another ends), and the pool shrinks by itself: a worker parked for
// a whole round of workerIdleRound ends, so a program that has stopped its
// processes keeps no goroutine of ours for more than two rounds (goleak in
// the tests sees none).
//
// A worker runs one process at a time, so a process is still run by one
// goroutine at a time; which goroutine changes from run to run, as it did
// with a new one each time. A ProcFunc must therefore leave its goroutine
// as it found it for what runs there next: not locked to its thread
// (runtime.LockOSThread without the unlock), no profiler labels of its
// own. A worker's profiler labels are those of the goroutine that started
// it, not necessarily of the process's spawner.

const (
	// maxIdleWorkers bounds the parked workers.
	maxIdleWorkers = 64
	// workerIdleRound is how often the pool ends the workers that have
	// been parked for a whole round.
	workerIdleRound = 50 * time.Millisecond
)

// A run is what a goroutine process runs next: its function, or the one
// it suspended with.
type run struct {
	p  *process
	fn ProcFunc
}

// A worker is a goroutine's place among the parked workers.
type worker struct {
	wake  chan bool // capacity 1: true, look at the queue; false, end
	round uint64    // workerPool.round when it parked
}

// workerPool holds the run queue and the parked workers of every node in
// the program.
type workerPool struct {
	mu      sync.Mutex
	queue   []run // runs waiting, oldest at head
	head    int
	pending int       // goroutines started or woken that have not yet looked at the queue
	idle    []*worker // parked, the most recently parked last
	round   uint64    // rounds of the reaper so far
	reap    *time.Timer
	armed   bool // reap is set to fire
}

var workers workerPool

// start runs fn for p: the next worker to finish or look takes it.
func (wp *workerPool) start(p *process, fn ProcFunc) {
	wp.mu.Lock()
	wp.queue = append(wp.queue, run{p, fn})
	if len(wp.queue)-wp.head <= wp.pending {
		wp.mu.Unlock()
		return
	}
	wp.pending++
	if n := len(wp.idle); n > 0 {
		w := wp.idle[n-1]
		wp.idle[n-1] = nil
		wp.idle = wp.idle[:n-1]
		wp.mu.Unlock()
		w.wake <- true
		return
	}
	wp.mu.Unlock()
	go work()
}

// work is a worker: it looks at the queue, runs what it finds, and parks
// (or ends) when the queue is empty.
func work() {
	wp := &workers
	var w *worker
	for {
		wp.mu.Lock()
		wp.pending-- // started or woken to look
		r, ok := wp.pop()
		for ok {
			wp.mu.Unlock()
			r.p.runFunc(r.fn)
			wp.mu.Lock()
			r, ok = wp.pop()
		}
		if len(wp.idle) >= maxIdleWorkers {
			wp.mu.Unlock()
			return
		}
		if w == nil {
			w = &worker{wake: make(chan bool, 1)}
		}
		wp.park(w)
		wp.mu.Unlock()
		if !<-w.wake {
			return
		}
	}
}

// pop takes the oldest run from the queue; wp.mu must be held.
func (wp *workerPool) pop() (run, bool) {
	if wp.head == len(wp.queue) {
		return run{}, false
	}
	r := wp.queue[wp.head]
	wp.queue[wp.head] = run{}
	wp.head++
	if wp.head == len(wp.queue) {
		wp.queue, wp.head = wp.queue[:0], 0
	} else if wp.head >= 1024 && wp.head*2 >= len(wp.queue) {
		// Never emptied while runs keep coming: move the rest down.
		n := copy(wp.queue, wp.queue[wp.head:])
		clear(wp.queue[n:])
		wp.queue, wp.head = wp.queue[:n], 0
	}
	return r, true
}

// park puts w among the idle workers; wp.mu must be held.
func (wp *workerPool) park(w *worker) {
	w.round = wp.round
	wp.idle = append(wp.idle, w)
	if !wp.armed {
		wp.armed = true
		if wp.reap == nil {
			wp.reap = time.AfterFunc(workerIdleRound, wp.retire)
		} else {
			wp.reap.Reset(workerIdleRound)
		}
	}
}

// retire ends the workers parked before the last round began: parked for
// a round at least. The idle list is in the order workers parked, so they
// are at its start. It runs every round while any worker is parked.
func (wp *workerPool) retire() {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	wp.round++
	n := 0
	for n < len(wp.idle) && wp.idle[n].round+1 < wp.round {
		wp.idle[n].wake <- false
		n++
	}
	if n > 0 {
		rest := copy(wp.idle, wp.idle[n:])
		clear(wp.idle[rest:])
		wp.idle = wp.idle[:rest]
	}
	if len(wp.idle) > 0 {
		wp.reap.Reset(workerIdleRound)
		return
	}
	wp.armed = false
}
