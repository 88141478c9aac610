package process

import (
	"context"
	"sync"
	"sync/atomic"
)

// LoopOptions configure a Loop. The zero value is an unbounded queue with
// no warning.
type LoopOptions struct {
	// MaxQueue refuses commands past this many waiting (ErrQueueFull).
	// 0 means unbounded.
	MaxQueue int
	// WarnQueue calls OnWarn when a command is queued with this many
	// already waiting. 0 disables the warning.
	WarnQueue int
	// OnWarn is called, off the loop, at most once per crossing of
	// WarnQueue (the depth must fall below it before it fires again).
	OnWarn func(depth int)
}

// Loop is the single-writer event loop that kinds are built on: commands
// arrive through Submit, one goroutine runs them in order and owns every
// piece of state they touch, and readers use snapshots the commands publish
// through atomic pointers. Submit never blocks: a full queue is an error
// the caller sees. RunOn runs a command on it and waits for it.
//
// SubmitUrgent is a second lane past the queue limit: before each queued
// command the loop first runs everything urgent, so work that must never
// be refused (a member's exit) runs promptly even while the queue is full.
type Loop struct {
	q       queue[task]
	wake    chan struct{}
	waiting atomic.Bool
	proc    atomic.Pointer[Proc] // set by RunProc: its process's wake-up is the loop's
	warnAt  atomic.Int64
	warned  atomic.Bool
	onWarn  func(int)
	stopped atomic.Bool
	done    chan struct{}

	urgentMu     sync.Mutex
	urgent       []task // guarded by urgentMu; nil once stopped
	urgentClosed bool   // guarded by urgentMu
	urgentSet    atomic.Bool
	urgentSpare  []task  // loop-owned: the drained list, reused
	urgentLeft   []task  // loop-owned: the urgent work taken and not yet run
	running      *waiter // loop-owned: the call whose command runs now
}

// task is one piece of queued work: a function submitted, or a call
// (RunOn), which the loop settles as stopped if it drops it, so that its
// caller waits on the call alone and not on the loop's end as well.
type task struct {
	fn   func()
	call *waiter
}

// run does t; on the loop.
func (l *Loop) run(t task) {
	if t.call == nil {
		t.fn()
		return
	}
	l.running = t.call
	t.call.run()
	l.running = nil
}

var _ UrgentOwner = (*Loop)(nil)

// NewLoop returns a loop; call Run to start it.
func NewLoop(opts LoopOptions) *Loop {
	l := &Loop{wake: make(chan struct{}, 1), onWarn: opts.OnWarn, done: make(chan struct{})}
	l.q.setLimit(opts.MaxQueue)
	l.warnAt.Store(int64(opts.WarnQueue))
	return l
}

// SetLimits changes the queue limits of a running loop.
func (l *Loop) SetLimits(maxQueue, warnQueue int) {
	l.q.setLimit(maxQueue)
	l.warnAt.Store(int64(warnQueue))
}

// Len returns how many commands wait.
func (l *Loop) Len() int { return l.q.len() }

// Done is closed when Run has returned.
func (l *Loop) Done() <-chan struct{} { return l.done }

// Submit queues fn to run on the loop.
func (l *Loop) Submit(fn func()) error { return l.submit(task{fn: fn}) }

// submitCall queues w's command (RunOn), in the urgent lane or the queue.
func (l *Loop) submitCall(w *waiter, urgent bool) error {
	if urgent {
		return l.submitUrgent(task{call: w})
	}
	return l.submit(task{call: w})
}

func (l *Loop) submit(t task) error {
	if l.stopped.Load() {
		return ErrLoopStopped
	}
	ok, full := l.q.push(&t)
	if !ok {
		if full {
			return ErrQueueFull
		}
		return ErrLoopStopped
	}
	if w := l.warnAt.Load(); w > 0 && l.onWarn != nil {
		depth := l.q.len()
		if int64(depth) >= w {
			if l.warned.CompareAndSwap(false, true) {
				l.onWarn(depth)
			}
		} else if l.warned.Load() {
			l.warned.Store(false)
		}
	}
	l.wakeUp()
	return nil
}

// SubmitUrgent queues fn to run on the loop before the next queued
// command, whatever the queue holds: it fails only once the loop stopped.
func (l *Loop) SubmitUrgent(fn func()) error { return l.submitUrgent(task{fn: fn}) }

func (l *Loop) submitUrgent(t task) error {
	l.urgentMu.Lock()
	if l.urgentClosed {
		l.urgentMu.Unlock()
		return ErrLoopStopped
	}
	l.urgent = append(l.urgent, t)
	l.urgentMu.Unlock()
	l.urgentSet.Store(true)
	l.wakeUp()
	return nil
}

// wakeUp wakes the loop if it sleeps.
func (l *Loop) wakeUp() {
	if h := l.proc.Load(); h != nil {
		// Run as a process (RunProc): it waits on its process's one
		// wake-up, which does nothing while the process runs.
		h.Notify()
		return
	}
	if l.waiting.Load() && l.waiting.CompareAndSwap(true, false) {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// runUrgent runs the urgent work queued so far; on the loop.
func (l *Loop) runUrgent() {
	l.urgentSet.Store(false)
	l.urgentMu.Lock()
	work := l.urgent
	l.urgent = l.urgentSpare[:0]
	l.urgentMu.Unlock()
	for i, t := range work {
		l.urgentLeft = work[i+1:] // for shut, should t end the goroutine
		l.run(t)
	}
	l.urgentLeft = nil
	clear(work)
	l.urgentSpare = work
}

// drain runs queued commands, urgent ones first whenever they are set,
// until the queue is empty or max have run (max < 0: no bound). It says
// whether any ran, and whether ctx is done (the caller returns then).
func (l *Loop) drain(ctx context.Context, max int) (ran, done bool) {
	for n := 0; max < 0 || n < max; n++ {
		if ctx.Err() != nil {
			return ran, true
		}
		if l.urgentSet.Load() {
			l.runUrgent()
		}
		t, ok := l.q.pop()
		if !ok {
			break
		}
		l.run(t)
		ran = true
	}
	return ran, false
}

// Run runs commands until ctx is done. Commands still queued then, urgent
// or not, are dropped; Submit fails from then on.
func (l *Loop) Run(ctx context.Context) {
	defer l.shut()
	for {
		if _, done := l.drain(ctx, -1); done {
			return
		}
		// Going idle: clear what was popped, and start the next round at
		// the first slot of the same chunk (rewind). A mailbox gives its
		// chunk back instead: a loop is one per entry, not per process.
		l.q.rewind()
		l.waiting.Store(true)
		if l.q.len() > 0 || l.urgentSet.Load() {
			l.waiting.Store(false)
			continue
		}
		select {
		case <-l.wake:
		case <-ctx.Done():
			return
		}
	}
}

// shut ends the loop: Submit fails from now on, what is queued is dropped
// (its calls fail as stopped: so does a call whose command ended the
// loop's goroutine), and Done is closed.
func (l *Loop) shut() {
	l.stopped.Store(true)
	l.q.close()
	l.urgentMu.Lock()
	l.urgentClosed = true
	urgent := l.urgent
	l.urgent = nil
	l.urgentMu.Unlock()
	if l.running != nil {
		l.running.stop()
		l.running = nil
	}
	for _, work := range [][]task{l.urgentLeft, urgent} {
		for _, t := range work {
			if t.call != nil {
				t.call.stop()
			}
		}
	}
	l.urgentLeft = nil
	// Closed: nothing more can be pushed, and everything pushed is
	// published to the consumer, which shut runs as.
	for t, ok := l.q.pop(); ok; t, ok = l.q.pop() {
		if t.call != nil {
			t.call.stop()
		}
	}
	close(l.done)
}
