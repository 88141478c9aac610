package pool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/backoff"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Topic is the topic of the messages Tell and Ask route (router.tell and
// router.ask in Lua). Messages sent to the pool's PID keep their own topic.
const Topic = "message"

// Errors callers branch on (err.kind in Lua).
var (
	// ErrNoRoutees: the pool has no live routee to route to.
	ErrNoRoutees = value.Sentinel("pool.no_routees", value.KindNotFound, "no routees to route to")
	// ErrStopped: the pool is stopping or stopped.
	ErrStopped = value.Sentinel("pool.stopped", value.KindStopped, "pool stopped")
	// ErrNoKey: consistent_hash got a message without a key.
	ErrNoKey = value.Sentinel("pool.no_key", value.KindInvalid, "consistent_hash: the message has no key (the key field of a table, or a string or number payload)")
	// ErrTooManyScatters: the router holds MaxOpenScatters open already.
	ErrTooManyScatters = value.Sentinel("pool.too_many_scatters", value.KindLimit, "too many open scatters")
	// ErrKeyNotRouted: a key was given to a router that does not route by
	// one (not consistent_hash).
	ErrKeyNotRouted = value.Sentinel("pool.key_not_routed", value.KindInvalid, "a key routes only a consistent_hash pool")
)

// MaxOpenScatters bounds the scatters (and tail chops) one router holds
// open at once. An ask's caller waits, so asks bound themselves; a tell
// with reply_to does not, and 300,000 of them to routees that never
// answered held 1.3 GB until their timeouts. Past the bound a scatter is
// refused with a limit error (router.tell returns nil, err).
const MaxOpenScatters = 10_000

// idleResizeInterval is how often an idle pool with a default resizer
// checks its size: Akka only resizes when messages arrive, so an idle pool
// would never shrink. A variable so tests can shorten it.
var idleResizeInterval = time.Second

const (
	// drainTick is how often retiring routees are checked for idleness.
	drainTick = 5 * time.Millisecond
	// minDrainTimeout bounds how long a retiring routee may take to finish
	// what it holds before it is terminated anyway.
	minDrainTimeout = 30 * time.Second
)

// restartBackoff is the delay between restarts of a routee that keeps
// exiting (within a second of its last exit) or cannot be spawned: the
// first such exit restarts it at once, then 10 ms, doubling up to 5 s.
var restartBackoff = backoff.Policy{Initial: 10 * time.Millisecond, Max: 5 * time.Second}

// config is what senders read on every message; replaced whole on update.
type config struct {
	strategy Strategy
	timeout  time.Duration
	interval time.Duration
	rz       resizer // nil without a resizer; only isTimeForResize is called off the loop
}

// snapshot is the immutable routing view senders use. readers counts the
// senders using it, so a routee removed by a resize is stopped only once no
// sender can still be handing it a message.
type snapshot struct {
	pids    []process.PID
	slots   []int    // slot number of each pid, for the ring
	digests []string // of the routee entry each pid was spawned from
	routee  registry.ID
	ring    *ring
	size    int // slots, including those waiting for a restart
	readers atomic.Int64
}

func (s *snapshot) has(pid process.PID) bool {
	for _, p := range s.pids {
		if p == pid {
			return true
		}
	}
	return false
}

// slot is one position in the pool: a routee restarted in place keeps its
// slot (and its consistent-hash keys).
type slot struct {
	n      int
	pid    process.PID // zero while waiting for a restart
	digest string      // of the routee entry pid was spawned from
	// failedOn is the digest this slot's last renewal failed on: a retry
	// on the same definition is not counted again.
	failedOn string
	removed  bool
	lastExit time.Time
	restarts backoff.Backoff // over restartBackoff
	delay    time.Duration   // before the pending restart; 0: at once
}

type retiree struct {
	deadline   time.Time
	terminated bool
}

// Pool is a running router.pool. Its exported methods may be called from
// any goroutine.
type Pool struct {
	core
	env   *registry.Env
	gauge prometheus.Gauge
	// monitorBy is the start's supervisor (registry.StartOptions): a
	// failed start drops its monitor before the process ends.
	monitorBy process.PID

	cfg  atomic.Pointer[config]
	snap atomic.Pointer[snapshot]
	view atomic.Pointer[View]

	counter  atomic.Uint64 // messages routed, the resizer's message counter
	resizing atomic.Bool
	final    atomic.Pointer[[]process.PID]
	// renewedOn is the routee digest every routee ran when the pool last
	// looked (after its start or a renewal); nil: some did not. Refresh
	// skips the call when it is still the digest in force.
	renewedOn atomic.Pointer[string]
	ready     chan error
	owner     process.Owner // the pool's process; set before Start returns

	// owned by the pool's process
	spec      *Spec
	rz        resizer
	slots     []*slot
	byPID     map[process.PID]*slot
	retiring  map[process.PID]*retiree
	old       []*snapshot
	nextSlot  int
	draining  bool
	tick      *time.Timer
	lastCount uint64
	resizes   []ResizeDecision // the latest changes of size, oldest first
}

// behavior is the pool's process: the single writer of its state, which
// changes only in commands run through p.owner (process.RunOnAs), which
// the process runs before Receive sees a message.
type behavior struct{ p *Pool }

func (b behavior) Init(c process.Context) error { return b.p.init(c.Self(), c.Owner()) }

func (b behavior) Receive(_ process.Context, m process.Message) { b.p.receive(m) }

func (b behavior) ReceiveEvent(_ process.Context, e process.Event) {
	if e.Kind == process.EventExit {
		b.p.routeeExited(e.From, e.Exit)
	}
}

func (b behavior) Terminate(process.Context, process.Exit) { b.p.teardown() }

// Start runs a pool for spec under entry ID id, and returns once its
// initial routees run.
func Start(ctx context.Context, env *registry.Env, id registry.ID, spec *Spec, opts registry.StartOptions) (*Pool, error) {
	if err := spec.check(); err != nil {
		return nil, value.NewError(value.KindInvalid, "pool %s: %v", id, err)
	}
	met := newMetrics(env.Metrics)
	p := &Pool{
		core: core{
			what: "pool", id: id, node: env.Node, log: env.EntryLogger(id), met: met,
			routed: met.routed.WithLabelValues(string(id), string(spec.Strategy)),
		},
		env:       env,
		monitorBy: opts.MonitorBy,
		gauge:     met.routees.WithLabelValues(string(id)),
		ready:     make(chan error, 1),
		spec:      spec,
		byPID:     map[process.PID]*slot{},
		retiring:  map[process.PID]*retiree{},
	}
	if spec.Resizer != nil {
		p.rz = newResizer(*spec.Resizer, nil)
	}
	p.cfg.Store(&config{strategy: spec.Strategy, timeout: spec.Timeout, interval: spec.Interval, rz: p.rz})
	p.snap.Store(&snapshot{})
	p.publishView()
	// Registered under its entry ID, like a process.lua service, so
	// process.send("app:pool", ...) routes too.
	pid, err := env.Node.Spawn(behavior{p}, process.SpawnOptions{System: true, Name: string(id), MonitorBy: opts.MonitorBy})
	if err != nil {
		return nil, fmt.Errorf("pool %s: %w", id, err)
	}
	select {
	case err := <-p.ready:
		if err != nil {
			return nil, fmt.Errorf("pool %s: %w", id, err)
		}
		return p, nil
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.stopping.Store(true)
		if !opts.MonitorBy.IsZero() {
			env.Node.Demonitor(opts.MonitorBy, pid)
		}
		_, _ = env.Node.Stop(sctx, pid)
		return nil, fmt.Errorf("pool %s: start: %w", id, ctx.Err())
	}
}

func (p *Pool) init(self process.PID, owner process.Owner) error {
	p.pid = self
	p.owner = owner
	for i := 0; i < p.spec.Size; i++ {
		if err := p.addSlot(); err != nil {
			// Returning the error ends the process; its Terminator
			// (teardown) stops the routees spawned so far. Start's error
			// tells of it: the supervisor's monitor goes first.
			if !p.monitorBy.IsZero() {
				p.env.Node.Demonitor(p.monitorBy, self)
			}
			p.ready <- err
			return err
		}
	}
	if p.rz != nil {
		// The initial resize runs before the first message (counter 0),
		// so a pool declared with size 0 starts at its lower bound.
		p.resizing.Store(true)
		p.resizeNow()
		p.armTick()
	}
	p.publish()
	p.noteRenewed(p.routeeDigest())
	p.log.Debug("pool started", "routee", string(p.spec.Routee), "strategy", string(p.spec.Strategy), "size", len(p.slots))
	p.ready <- nil
	return nil
}

// call runs fn on the pool's process and waits for it.
func (p *Pool) call(ctx context.Context, fn func()) error {
	return process.RunOnAs(ctx, p.owner, process.CommandFunc(func() error { fn(); return nil }), process.CallOptions{},
		process.CallErrors{What: p.what + " " + string(p.id), Stopped: ErrStopped}) // not a hot path
}

// spawn starts one routee, linked to and monitored by the pool from its
// first instruction (a Template honours LinkTo and MonitorBy): the link
// takes routees down with the pool however it ends (even killed), the
// monitor tells the pool when a routee exits, normally or not, even one
// gone before spawn returns. It returns the digest of the definition the
// routee runs (read before the spawn: a reload in between makes it older,
// never newer, so renew catches it).
func (p *Pool) spawn() (process.PID, string, error) {
	digest := p.routeeDigest()
	pid, err := p.env.Entries.Spawn(p.spec.Routee, registry.SpawnOptions{
		SpawnOptions: process.SpawnOptions{LinkTo: p.pid, MonitorBy: p.pid},
		Managed:      true,
	})
	if err != nil {
		return process.PID{}, "", fmt.Errorf("spawn routee %s: %w", p.spec.Routee, err)
	}
	return pid, digest, nil
}

// noteRenewed records whether every live routee runs cur, the routee
// digest in force (see renewedOn); on the pool's process.
func (p *Pool) noteRenewed(cur string) {
	for _, s := range p.slots {
		if !s.pid.IsZero() && s.digest != cur {
			p.renewedOn.Store(nil)
			return
		}
	}
	p.renewedOn.Store(&cur)
}

func (p *Pool) addSlot() error {
	pid, digest, err := p.spawn()
	if err != nil {
		return err
	}
	s := &slot{n: p.nextSlot, pid: pid, digest: digest, restarts: backoff.New(restartBackoff)}
	p.nextSlot++
	p.slots = append(p.slots, s)
	p.byPID[pid] = s
	return nil
}

// publish replaces the routing snapshot with the current live routees.
func (p *Pool) publish() {
	s := &snapshot{size: len(p.slots), routee: p.spec.Routee}
	for _, sl := range p.slots {
		if !sl.pid.IsZero() {
			s.pids = append(s.pids, sl.pid)
			s.slots = append(s.slots, sl.n)
			s.digests = append(s.digests, sl.digest)
		}
	}
	if p.cfg.Load().strategy == ConsistentHash {
		names := make([]string, len(s.slots))
		for i, n := range s.slots {
			names[i] = strconv.Itoa(n)
		}
		s.ring = newRing(names)
	}
	prev := p.snap.Swap(s)
	if prev != nil && len(prev.pids) > 0 {
		p.old = append(p.old, prev)
	}
	p.pruneOld()
	p.gauge.Set(float64(len(s.pids)))
	p.publishView()
}

// pruneOld forgets replaced snapshots no sender uses any more. A replaced
// snapshot's reader count only goes down: route re-checks that its
// snapshot is current after counting itself in.
func (p *Pool) pruneOld() {
	keep := p.old[:0]
	for _, s := range p.old {
		if s.readers.Load() > 0 {
			keep = append(keep, s)
		}
	}
	clear(p.old[len(keep):])
	p.old = keep
}

// routeeExited handles the EXIT event of a routee (or of a retiring one).
func (p *Pool) routeeExited(pid process.PID, exit process.Exit) {
	if _, ok := p.retiring[pid]; ok {
		delete(p.retiring, pid)
		return
	}
	s := p.byPID[pid]
	if s == nil {
		return
	}
	delete(p.byPID, pid)
	if p.stopping.Load() {
		return
	}
	s.pid = process.PID{}
	p.met.restarts.WithLabelValues(string(p.id)).Inc()
	now := time.Now()
	if !s.lastExit.IsZero() && now.Sub(s.lastExit) < time.Second {
		s.delay = s.restarts.Next()
	} else {
		s.restarts.Reset()
		s.delay = 0
	}
	s.lastExit = now
	if exit.Err != nil {
		// New code that raises at once crash-loops here, restarted in
		// place: the reload that brought it counts it (degraded).
		if !errors.Is(exit.Err, process.ErrShutdown) {
			p.env.Crashed(p.spec.Routee, exit.Err)
		}
		e, _ := p.env.Entries.Entry(p.spec.Routee)
		p.log.Warn("routee exited; restarting it in place", "routee", pid.String(), "slot", s.n, "error", e.ShowError(exit.Err), "delay", s.delay)
	} else {
		p.log.Info("routee returned; restarting it in place", "routee", pid.String(), "slot", s.n, "delay", s.delay)
	}
	p.publish()
	p.scheduleRestart(s)
}

func (p *Pool) scheduleRestart(s *slot) {
	if s.delay == 0 {
		p.restart(s)
		return
	}
	time.AfterFunc(s.delay, func() { _ = p.owner.Submit(func() { p.restart(s) }) })
}

func (p *Pool) restart(s *slot) {
	if s.removed || !s.pid.IsZero() || p.stopping.Load() {
		return
	}
	pid, digest, err := p.spawn()
	if err != nil {
		s.delay = s.restarts.Next()
		p.log.Error("restarting routee failed; retrying", "slot", s.n, "error", err, "delay", s.delay)
		p.scheduleRestart(s)
		return
	}
	s.pid, s.digest = pid, digest
	p.byPID[pid] = s
	p.publish()
}

// routeeDigest is the digest of the routee entry in force: spawns use that
// entry, so it tells which code the routees run.
func (p *Pool) routeeDigest() string {
	if e, ok := p.env.Entries.Entry(p.spec.Routee); ok {
		return e.Digest
	}
	return ""
}

// renew gives every slot whose routee runs another definition than the
// routee entry now in force (a reload changed its source or fields) a
// routee spawned from it. The old routees leave the routing snapshot at
// once and stop once idle and unreachable, as those a shrink removes do,
// so nothing they accepted is dropped. A slot whose new routee cannot be
// spawned keeps its old one, and is renewed by the next reload's Refresh.
func (p *Pool) renew() {
	cur := p.routeeDigest()
	p.upgradeOutdated(cur)
	deadline := time.Now().Add(max(minDrainTimeout, 2*p.cfg.Load().timeout))
	renewed, failed, newFailures := 0, 0, 0
	for _, s := range p.slots {
		if p.stopping.Load() {
			// The pool is being stopped (a shutdown came during a slow
			// renewal): its routees, old and new, go with it.
			break
		}
		if s.digest == cur {
			continue
		}
		pid, digest, err := p.spawn()
		if err != nil {
			if p.stopping.Load() {
				break
			}
			failed++
			if s.failedOn != cur {
				s.failedOn = cur
				newFailures++
			}
			p.log.Error("renewing a routee failed; the slot keeps its old one", "slot", s.n, "error", err)
			p.env.RenewalFailed(p.pid, strconv.Itoa(s.n), p.spec.Routee, err)
			continue
		}
		if !s.pid.IsZero() {
			delete(p.byPID, s.pid)
			p.retiring[s.pid] = &retiree{deadline: deadline}
		}
		s.pid, s.digest, s.failedOn = pid, digest, ""
		p.byPID[pid] = s
		renewed++
	}
	p.noteRenewed(cur)
	if renewed == 0 && failed == 0 {
		return
	}
	p.publish()
	p.armDrain()
	p.met.renewals.WithLabelValues(string(p.id)).Add(float64(renewed))
	p.met.renewalFailures.WithLabelValues(string(p.id)).Add(float64(newFailures))
	p.log.Info("routees renewed on a new definition", "routee", string(p.spec.Routee), "renewed", renewed, "failed", failed)
}

// loads reads what the resizer needs of every slot.
func (p *Pool) loads() []load {
	out := make([]load, len(p.slots))
	for i, s := range p.slots {
		if s.pid.IsZero() {
			continue
		}
		q := p.node.MailboxLen(s.pid)
		out[i] = load{queued: max(q, 0), busy: q > 0 || !p.node.Idle(s.pid)}
	}
	return out
}

// resizeNow runs the resizer once; resizing must be set.
func (p *Pool) resizeNow() {
	defer p.resizing.Store(false)
	if p.rz == nil || p.stopping.Load() {
		return
	}
	loads := p.loads()
	now := time.Now()
	p.rz.report(loads, p.counter.Load(), now)
	p.applyDelta(p.rz.resize(loads, now), "resizer")
}

// applyDelta grows or shrinks the pool by d routees.
func (p *Pool) applyDelta(d int, why string) {
	from := len(p.slots)
	switch {
	case d > 0:
		for i := 0; i < d; i++ {
			if err := p.addSlot(); err != nil {
				p.log.Error("growing the pool failed", "error", err)
				break
			}
		}
		p.met.resizes.WithLabelValues(string(p.id), "up").Inc()
	case d < 0:
		p.shrink(-d)
		p.met.resizes.WithLabelValues(string(p.id), "down").Inc()
	default:
		return
	}
	p.noteResize(from, len(p.slots), why)
	p.publish()
	p.log.Info("pool resized", "from", from, "to", len(p.slots), "by", why)
}

// shrink removes the last k slots. Their routees leave the routing
// snapshot now and are stopped once idle (see drain).
func (p *Pool) shrink(k int) {
	k = min(k, len(p.slots))
	cut := len(p.slots) - k
	deadline := time.Now().Add(max(minDrainTimeout, 2*p.cfg.Load().timeout))
	for _, s := range p.slots[cut:] {
		s.removed = true
		if !s.pid.IsZero() {
			delete(p.byPID, s.pid)
			p.retiring[s.pid] = &retiree{deadline: deadline}
		}
	}
	clear(p.slots[cut:])
	p.slots = p.slots[:cut]
	p.armDrain()
}

func (p *Pool) armDrain() {
	if p.draining || len(p.retiring) == 0 {
		return
	}
	p.draining = true
	time.AfterFunc(drainTick, func() { _ = p.owner.Submit(p.drain) })
}

// drain stops each retiring routee once no sender can still reach it
// through an old snapshot and it has finished what it holds.
func (p *Pool) drain() {
	p.draining = false
	if p.stopping.Load() {
		return
	}
	p.pruneOld()
	now := time.Now()
	for pid, r := range p.retiring {
		if r.terminated {
			continue
		}
		if !p.node.Alive(pid) {
			delete(p.retiring, pid)
			continue
		}
		reachable := false
		for _, s := range p.old {
			if s.has(pid) {
				reachable = true
				break
			}
		}
		switch {
		case !reachable && p.node.Idle(pid):
		case now.After(r.deadline):
			p.log.Warn("retiring routee did not finish in time; terminating it", "routee", pid.String())
		default:
			continue
		}
		r.terminated = true
		_ = p.node.Terminate(pid)
	}
	waiting := false
	for _, r := range p.retiring {
		waiting = waiting || !r.terminated
	}
	if waiting {
		p.armDrain()
	}
}

// armTick schedules the idle check of a pool with a resizer.
func (p *Pool) armTick() {
	if p.rz == nil || p.stopping.Load() {
		return
	}
	every := idleResizeInterval
	if s := p.rz.spec(); s.Type == OptimalResizerType {
		every = s.ActionInterval
	}
	p.tick = time.AfterFunc(every, func() { _ = p.owner.Submit(p.onTick) })
}

// onTick resizes a pool that routed nothing since the last tick: Akka
// resizes only when messages arrive, which would leave an idle pool at its
// busiest size forever.
func (p *Pool) onTick() {
	n := p.counter.Load()
	if p.rz != nil && n == p.lastCount && p.resizing.CompareAndSwap(false, true) {
		p.resizeNow()
	}
	p.lastCount = n
	p.armTick()
}

// teardown ends the pool: every open scatter fails, every routee is told to
// stop. It runs on the pool's process as it exits.
func (p *Pool) teardown() {
	p.stopping.Store(true)
	p.failOpen()
	if p.tick != nil {
		p.tick.Stop()
	}
	var pids []process.PID
	for _, s := range p.slots {
		if !s.pid.IsZero() {
			pids = append(pids, s.pid)
		}
	}
	for pid := range p.retiring {
		pids = append(pids, pid)
	}
	for _, pid := range pids {
		_ = p.node.Terminate(pid)
	}
	p.final.Store(&pids)
	p.snap.Store(&snapshot{})
	p.met.routees.DeleteLabelValues(string(p.id))
	p.publishView()
}

// Stop stops the pool: open scatters fail at once with "stopped while the
// scatter was still open", then the pool and its routees stop. Past ctx's
// deadline they are killed.
func (p *Pool) Stop(ctx context.Context) error {
	p.stopping.Store(true)
	p.failOpen()
	if _, err := p.node.Stop(ctx, p.pid); err != nil && !errors.Is(err, process.ErrNoProcess) {
		return fmt.Errorf("pool %s: stop: %w", p.id, err)
	}
	var pids []process.PID
	if f := p.final.Load(); f != nil {
		pids = *f
	} else {
		pids = p.snap.Load().pids
	}
	for _, pid := range pids {
		if _, err := p.node.Stop(ctx, pid); err != nil && !errors.Is(err, process.ErrNoProcess) {
			return fmt.Errorf("pool %s: stop routee %s: %w", p.id, pid, err)
		}
	}
	return nil
}
