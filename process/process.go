package process

import (
	"context"
	"sync"
	"sync/atomic"
)

// process is one live process. Its hot fields (the mailbox and the wake-up
// state) sit in the struct; everything used rarely — monitors, links,
// names, the context of a goroutine process — lives in ext, allocated on
// first use, so an idle Behavior stays small.
type process struct {
	// The first 128 bytes are the senders': what they read on every
	// message, written rarely, and the mailbox's producer fields, which
	// they write. The rest is the consumer's. A process is 256 bytes, a
	// size class whose objects are 256-byte aligned, so the boundary is
	// one between two aligned 128-byte pairs of cache lines: Intel's
	// spatial prefetcher, which completes such a pair on every miss, never
	// drags one side's line along with the other's (TestMailboxLayout).
	pid      PID
	node     *Node
	behavior Behavior      // nil for a goroutine process
	wake     chan struct{} // goroutine process: made by the first Arm; signalled when mail or an event arrives
	sched    atomic.Int32  // Behavior: schedIdle, schedRunning or schedLooking (behavior.go)
	wait     atomic.Int32  // goroutine process: waitRunning, waitArmed, waitSuspending or waitSuspended

	// The mailbox keeps its producer and consumer fields a cache line
	// apart; its producer fields end the senders' 128 bytes, and what
	// follows it shares the consumer's line.
	mb queue[envelope]

	// Read by the consumer on every message, written rarely.
	stopReq  atomic.Bool // a stop was requested; see ext.stopReason
	dead     atomic.Bool
	selfStop bool // Behavior: Context.Stop was called; owned by the dispatcher
	owned    bool // the process is an Owner and runs commands (owner.go); set and read on its goroutine

	mu  sync.Mutex              // guards the fields of ext and the transition to dead
	ext atomic.Pointer[procExt] // allocated on first use, never replaced

	// The meta of this process's last tell (see meta): written and read
	// by whoever sends in its name, which is the process itself.
	tellMeta atomic.Pointer[meta]
}

type procExt struct {
	ctx    context.Context // goroutine process only
	cancel context.CancelFunc
	run    atomic.Int32 // goroutine process: runStarted, runReturned or runAbandoned
	cont   ProcFunc     // goroutine process: what the next wake-up runs while suspended (suspend.go)
	busy   atomic.Bool  // goroutine process: its wait is not for mail (Proc.Busy)

	events lazyEvents // made by the first event (deliverEvent)

	monitors   map[PID]struct{} // processes that monitor this one
	watching   map[PID]struct{} // processes this one monitors
	links      map[PID]struct{}
	names      []string
	relNodes   []string // remote nodes whose Node.rel lists this process
	trapLinks  bool
	system     bool // SpawnOptions.System; set before the process is published
	parent     PID  // a system process's LinkTo: the one untrusted caller it obeys
	stopReason error
	exit       Exit
	done       chan struct{} // closed at teardown; created by the first waiter
	held       []*meta       // goroutine process: asks it holds unanswered (Proc.Unanswered)
	limits     Limits        // SpawnOptions.Limits (limits.go)

	// The handle every run of a goroutine process is given (runFunc),
	// made once. Last, away from cont, busy and run, which other
	// goroutines write while the process runs: its methods read it at
	// every call.
	self Proc
}

// lazyEvents is a process's event queue, made when its first event comes:
// most processes never get one, and a queue held in procExt was 144 bytes
// of every goroutine process (a million idle Lua processes: 137 MiB). Its
// methods are the queue's; on a queue not yet made they find it empty.
type lazyEvents struct{ q atomic.Pointer[queue[Event]] }

// made returns the queue, making it with the process's MaxEvents; p.mu
// must be held, and the process not dead: finish closes what exists once
// it has marked the process dead, so no queue can be made after that.
func (l *lazyEvents) made(x *procExt) *queue[Event] {
	q := l.q.Load()
	if q == nil {
		q = new(queue[Event])
		q.setLimit(x.limits.MaxEvents)
		l.q.Store(q)
	}
	return q
}

func (l *lazyEvents) len() int {
	if q := l.q.Load(); q != nil {
		return q.len()
	}
	return 0
}

func (l *lazyEvents) pop() (Event, bool) {
	if q := l.q.Load(); q != nil {
		return q.pop()
	}
	return Event{}, false
}

func (l *lazyEvents) trim() {
	if q := l.q.Load(); q != nil {
		q.trim()
	}
}

func (l *lazyEvents) close() {
	if q := l.q.Load(); q != nil {
		q.close()
	}
}

// extLocked returns p.ext.Load(), allocating it; p.mu must be held.
func (p *process) extLocked() *procExt {
	x := p.ext.Load()
	if x == nil {
		x = &procExt{}
		p.ext.Store(x)
	}
	return x
}

// deliver puts m in the mailbox and wakes the process.
func (p *process) deliver(m *Message) error {
	e := envelope{meta: p.metaOf(m), payload: m.Payload}
	ok, full := p.mb.push(&e)
	if !ok {
		if full {
			return ErrMailboxFull
		}
		return ErrNoProcess
	}
	p.notify()
	return nil
}

// metaOf returns the meta that carries m's topic, sender and reply target
// into p's mailbox: an ask's own, a shared one for a tell (see meta).
func (p *process) metaOf(m *Message) *meta {
	if r := m.reply; r != nil {
		if r.from == m.From && r.topic == m.Topic {
			return r
		}
		// Changed after WithReply: carry what the sender set.
		c := *r
		c.from, c.topic = m.From, m.Topic
		return &c
	}
	if !m.From.IsZero() {
		return p.node.senderMeta(m.From, m.Topic)
	}
	if m.Topic == "" {
		return nil
	}
	n := p.node
	if mt := n.anonMeta.Load(); mt != nil && mt.topic == m.Topic {
		return mt
	}
	mt := sharedMeta(m.Topic, PID{})
	n.anonMeta.Store(mt)
	return mt
}

// senderMeta returns the meta of a tell from from with topic: the
// sender's last one when it is a live local process whose last tell had
// the same topic, a fresh one otherwise.
func (n *Node) senderMeta(from PID, topic string) *meta {
	sp := n.lookup(from)
	if sp == nil {
		return &meta{topic: topic, from: from}
	}
	if mt := sp.tellMeta.Load(); mt != nil && mt.topic == topic {
		return mt
	}
	mt := sharedMeta(topic, from)
	sp.tellMeta.Store(mt)
	return mt
}

// deliverEvent queues a system event and wakes the process.
func (p *process) deliverEvent(e Event) {
	p.mu.Lock()
	if p.dead.Load() {
		p.mu.Unlock()
		return
	}
	x := p.extLocked()
	q := x.events.made(x)
	p.mu.Unlock()
	if ok, full := q.push(&e); !ok {
		if full { // Limits.MaxEvents
			p.node.eventDropped(p.pid, &e)
		}
		return
	}
	p.notify()
}

// afterWaitLook, set only by tests, runs in notify between its look at a
// goroutine process's wait state and its CAS: the window in which the
// owner may move the state (see TestNotifyRetriesAfterCommit).
var afterWaitLook func()

// notify wakes whoever consumes p's mail.
func (p *process) notify() {
	if p.behavior != nil {
		if p.sched.Load() == schedIdle && p.sched.CompareAndSwap(schedIdle, schedRunning) {
			go p.dispatch()
		}
		return
	}
	for {
		w := p.wait.Load()
		if w == waitRunning || w == waitLooking {
			return
		}
		if afterWaitLook != nil {
			afterWaitLook()
		}
		// The owner may move the state meanwhile (a Commit takes
		// waitSuspending to waitSuspended): look again rather than lose
		// the wake-up.
		if !p.wait.CompareAndSwap(w, waitRunning) {
			continue
		}
		switch w {
		case waitSuspended:
			// This wake-up won the process: it goes on, on a worker
			// (suspend.go, workers.go).
			x := p.ext.Load()
			fn := x.cont
			x.cont = nil
			workers.start(p, fn)
		case waitArmed:
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
		// waitSuspending: its Commit fails, and the process carries on.
		return
	}
}

// requestStop asks p to stop with reason (ErrShutdown for a plain
// terminate). The first request wins; p exits when its code returns.
func (p *process) requestStop(reason error) {
	p.mu.Lock()
	if p.dead.Load() || p.stopReq.Load() {
		p.mu.Unlock()
		return
	}
	x := p.extLocked()
	x.stopReason = reason
	p.stopReq.Store(true)
	cancel := x.cancel
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	// A Behavior runs to see the request; a suspended goroutine process
	// has no goroutine that would see its context cancelled.
	p.notify()
}

// exitReason replaces what the process's code returned with the reason of a
// requested stop, if there was one.
func (p *process) exitReason(e Exit) Exit {
	if !p.stopReq.Load() {
		return e
	}
	p.mu.Lock()
	r := p.ext.Load().stopReason
	p.mu.Unlock()
	return Exit{Value: e.Value, Err: r}
}

// afterMarkDead, set only by tests, runs in finish once a process is
// marked dead and before the rest of its teardown (it is still in the
// node's table): by then a consumer that saw it dead may have settled its
// mailbox, so a send that looked it up must fail (see
// TestAskQueuedAsItsProcessIsKilled). Atomic: other processes may be
// exiting while a test sets it.
var afterMarkDead atomic.Pointer[func(PID)]

// finish tears p down: it is removed from the node, its names released,
// its monitors told and its links signalled. Only the first call counts.
func (p *process) finish(e Exit) {
	p.mu.Lock()
	if p.dead.Load() {
		p.mu.Unlock()
		return
	}
	// Close the mailbox before anyone can see p dead: the consumer that
	// sees it dead settles what the mailbox holds, once (settleOnExit), so
	// a send must not be able to queue after that.
	p.mb.close()
	p.dead.Store(true)
	x := p.ext.Load()
	// Take the relation sets while holding the lock: other processes that
	// exit at the same moment edit them (removeLink, dropMonitor) under it.
	var names, relNodes []string
	var watching, monitors, links map[PID]struct{}
	if x != nil {
		x.exit = e
		names, watching, monitors, links = x.names, x.watching, x.monitors, x.links
		x.names, x.watching, x.monitors, x.links = nil, nil, nil, nil
		relNodes, x.relNodes = x.relNodes, nil
	}
	p.mu.Unlock()
	if hook := afterMarkDead.Load(); hook != nil {
		(*hook)(p.pid)
	}

	n := p.node
	if x != nil && x.done != nil {
		defer close(x.done)
	}
	n.procs.delete(p.pid.ID, n.nextID.Load())
	// Names go before the count drops: whoever sees Count fall (a test
	// waiting for "no process left", a restart that spawns under the same
	// name) finds them free.
	for _, name := range names {
		n.names.CompareAndDelete(name, p.pid)
	}
	n.live.Add(-1)
	n.retireHighWater(p.mb.highWater())
	if p.behavior != nil && p.mb.len() > 0 {
		// Killed from outside: a dispatcher settles the asks left in the
		// mailbox (settle.go); one that runs now sees the process dead.
		p.notify()
	}
	if x == nil {
		n.exited(p.pid, e)
		return
	}
	if x.cancel != nil {
		x.cancel()
		if p.behavior == nil {
			// A suspended process goes on to see its context cancelled,
			// and returns.
			p.notify()
		}
	}
	x.events.close()
	if len(relNodes) > 0 {
		n.unrelate(p.pid, relNodes)
	}
	for t := range watching {
		n.dropMonitor(t, p.pid)
	}
	// Links before monitors: a local process that sees the EXIT knows
	// every link signal of this exit has already been given.
	for l := range links {
		n.linkExit(l, p.pid, e)
	}
	for w := range monitors {
		// The monitor is spent, as in OTP once its DOWN is given: a local
		// watcher no longer counts it (against its MaxMonitors too).
		if wp := n.lookup(w); wp != nil {
			n.unwatch(wp, p.pid)
		}
		n.sendEvent(w, Event{Kind: EventExit, From: p.pid, Exit: e})
	}
	n.exited(p.pid, e)
}
