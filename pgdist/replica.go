package pgdist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/internal/backoff"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote/wire"
)

// maxDiscover bounds the peers a starting scope sends discover to, so that
// many nodes restarting at once do not each ask all the others (an N²
// storm).
const maxDiscover = 4

// maxHeld bounds the messages of one node kept while its sender is being
// verified; past it they are dropped, and the node is asked for its whole
// state once verified.
const maxHeld = 4096

// replica is one scope's part in the cluster: it owns the scope's peers
// (other nodes' scopes of the same entry), sends this node's changes to
// them, and applies theirs to the scope. It lives on the scope's loop,
// which is also the scope's process: the messages of other nodes' scopes
// and the exits of their processes reach it there (pgscope.Peering), its
// peers' changes apply to the scope at once (pgscope.OnLoop), and this
// node's changes, which the scope hands its Sink on the loop, go out
// together after each round of the loop's work (Flush). What comes from
// elsewhere (the membership, gossip, timers, answers to hellos) is run
// there with Scope.Submit.
type replica struct {
	d    *Distributor
	s    *pgscope.Scope
	id   string // the entry ID: the name of the scope's process on every node
	node *process.Node
	self process.PID // the scope's process
	log  *slog.Logger
	met  scopeMetrics

	quit     chan struct{} // closed by Stop
	stopped  atomic.Bool
	stopOnce sync.Once

	// Owned by the loop (by Stop once it has stopped).
	sub            *pgscope.Subscription
	cancelMembers  func()
	removeBreakers func()
	ae             *time.Timer              // the next anti-entropy turn
	spec           pgscope.Spec             // as of the work being handled
	local          map[string][]process.PID // this node's members: the subscription's snapshot and events
	synced         string                   // the encoded local state; "" when it changed since
	pending        []pgscope.Op             // local changes not yet sent
	peers          map[string]*peer         // by node
	noticed        map[string]time.Time     // start notices of nodes not live (yet), by arrival: owed a sync when they join
	list           []*peer                  // peers by node name: fan-out and anti-entropy order
	aeNext         int                      // the next peer of anti-entropy
	changed        bool                     // a peer's state changed: publish
	ops            wire.Bytes               // the pg.ops payload's buffer, reused from one fan-out to the next
	logged         map[string]struct{}      // problems logged once per node and kind
	rng            *rand.Rand               // the start's random peers

	initial initialState  // the first sync, owned by the loop; done is read by WaitSynced
	opsBuf  []pgscope.Op  // a pg.ops message being applied
	pidsBuf []process.PID // its PIDs (the scope keeps nothing of them)

	snap atomic.Pointer[[]peerSnap] // published for View and BreakerStates
	// The last publication of snap and the timer of the next (see
	// publishIfChanged); pubArmed: it is set to run.
	pubAt    time.Time
	pubTimer *time.Timer
	pubArmed bool
}

// want is what a peer is owed besides the changes as they happen: when a
// change could not be sent, the next thing it gets is the whole state,
// which carries every change it missed.
type want uint8

const (
	wantSync     want = 1 << iota // this node's full state (pg.sync)
	wantDiscover                  // ours, and theirs in return (pg.discover)
)

// peer is another node, as one scope sees it.
type peer struct {
	node      string
	live      bool        // a live cluster member
	pid       process.PID // its scope's process, verified; zero: none known
	monitored bool        // pid is monitored by the scope's process
	synced    bool        // a full state of pid has been applied
	verifying process.PID // a hello is out to verify this sender
	held      []process.Message
	br        breaker
	want      want
	attempt   int         // retries made of what it is owed
	timer     *time.Timer // the next retry
	gen       uint64      // of timer: a stale timer's item is ignored
	// heard is when its scope last spoke (Unix ns, 0: never), shared
	// with the published snapshots: a message records it there, so that
	// the peers are not published again for every message received.
	heard     *atomic.Int64
	asked     time.Time // when a discover last went out: its answer is on its way
	absent    bool      // it runs no scope of the entry (as far as is known): nothing is sent
	probing   bool      // a hello is out to learn its scope's process
	probeAsks bool      // when the probe finds the scope, send it a discover
	// noticed: its start notice came while a probe was out, so the
	// probe's answer may be older than the notice (see probed).
	noticed bool
	// told: this node's whole state went to it (a sync or a discover),
	// since its scope was last seen to change. Until then a local change
	// goes to it as the whole state, not as ops (see sendPending).
	told bool
	// toldTo is the scope process whose hello or start notice this
	// node's whole state answered (see greeted): the other of the two
	// sends nothing more.
	toldTo process.PID
}

func newReplica(d *Distributor, s *pgscope.Scope) (*replica, error) {
	r := &replica{
		d: d, s: s, id: string(s.ID()), node: d.node, self: s.PID(),
		log: d.log.With("entry", string(s.ID())), met: d.met.scope(string(s.ID())),
		quit:  make(chan struct{}),
		peers: map[string]*peer{}, logged: map[string]struct{}{},
		rng:     rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		initial: initialState{done: make(chan struct{})}, // awaited from begin on
	}
	r.snap.Store(&[]peerSnap{}) // the series are published once it runs
	return r, nil
}

// Start implements pgscope.Peering: it names the scope's process after
// the entry, so other nodes address it as entry@node, then, on the loop,
// subscribes to this node's members and to the membership and begins:
// discovers its peers.
func (r *replica) Start() error {
	if err := r.node.Register(r.id, r.self); err != nil {
		return fmt.Errorf("name the scope's process %q: %w", r.id, err)
	}
	return r.s.Do(func() error {
		sub, mine, err := r.s.OnLoop().SubscribeLocal(pgscope.SubscribeOptions{Sink: localSink{r}})
		if err != nil {
			return fmt.Errorf("subscribe to the local members: %w", err)
		}
		r.sub, r.local = sub, mine
		live, cancel := r.d.c.Subscribe(func(e MemberEvent) {
			r.submit(func(now time.Time) { r.member(e.Node, e.Up, now) })
		})
		r.cancelMembers = cancel
		r.spec = r.s.Spec()
		for _, n := range live {
			// A node may have spoken already: its message reached the
			// loop before this did.
			p := r.peers[n]
			if p == nil {
				p = r.addPeer(n)
			}
			p.live = true
		}
		r.d.add(r)
		r.removeBreakers = r.d.c.AddBreakers(r.id, r)
		r.begin()
		r.publishIfChanged()
		r.ae = time.AfterFunc(r.aeDelay(), func() { r.submit(r.antiEntropyTurn) })
		return nil
	})
}

// Stop implements pgscope.Peering, once the scope's loop has stopped.
func (r *replica) Stop() {
	r.stopOnce.Do(func() {
		r.stopped.Store(true)
		close(r.quit)
		if r.cancelMembers != nil {
			r.cancelMembers()
		}
		if r.removeBreakers != nil {
			r.removeBreakers()
		}
		if r.ae != nil {
			r.ae.Stop()
		}
		if r.pubTimer != nil {
			r.pubTimer.Stop()
		}
		if r.sub != nil {
			r.sub.Close(false)
		}
		for _, p := range r.peers {
			if p.timer != nil {
				p.timer.Stop()
			}
		}
		if r.d.remove(r) {
			r.d.met.forget(r.id)
		}
		r.node.Unregister(r.id, r.self)
	})
}

// submit runs fn on the loop, after the local changes gathered so far are
// sent (a sync sent after them must not be followed by changes it already
// holds); the peers are published at the end of the loop's round (Flush),
// once for all the work of the round: a start that hears from a hundred
// peers at once publishes them once, not a hundred times.
func (r *replica) submit(fn func(now time.Time)) {
	if r.stopped.Load() {
		return
	}
	_ = r.s.Submit(func() {
		r.enter()
		fn(time.Now())
	})
}

// enter readies the replica for work on the loop that is not a local
// change: the spec as now, and what local changes were gathered sent.
func (r *replica) enter() {
	r.spec = r.s.Spec()
	r.sendPending()
}

// Receive implements pgscope.Peering, on the loop. A hello is answered at
// once: the reply comes from the scope's process, which is how the asker
// knows it.
func (r *replica) Receive(m process.Message) {
	if r.stopped.Load() {
		return
	}
	if m.Topic == topicHello {
		if m.CanReply() && m.From.Node != r.node.Name() {
			_, _ = m.Reply(r.self, string([]byte{protoVersion}), nil)
			r.enter()
			r.greeted(m.From, time.Now())
		}
		return
	}
	r.enter()
	r.message(m, time.Now())
}

// Down implements pgscope.Peering, on the loop.
func (r *replica) Down(pid process.PID, reason error) {
	if !r.stopped.Load() {
		r.enter()
		r.down(pid, reason)
	}
}

// Flush implements pgscope.Peering: after each round of the loop's work,
// the local changes it made go out together, and the peers are
// published.
func (r *replica) Flush() {
	if r.stopped.Load() {
		return
	}
	if len(r.pending) > 0 {
		r.spec = r.s.Spec()
		r.sendPending()
	}
	r.publishIfChanged()
}

// settle waits until the loop has handled everything queued before it (and
// sent the local changes among it), or the replica stopped.
func (r *replica) settle() { r.do(func() {}) }

// do runs fn on the loop after everything queued before, and waits for it
// (or for the scope to stop). Tests and benchmarks use it.
func (r *replica) do(fn func()) {
	_ = r.s.Do(func() error {
		r.enter()
		fn()
		r.sendPending()
		r.publishNow()
		return nil
	})
}

// localSink takes the scope's local changes, on the loop, to be sent at
// the round's end (Flush); it never refuses one, as the scope's
// SubscribeLocal asks.
type localSink struct{ r *replica }

func (k localSink) Offer(ev pgscope.Event) bool {
	if !k.r.stopped.Load() {
		k.r.localChange(ev)
	}
	return true
}

func (k localSink) Close() {}

// antiEntropyTurn is the anti-entropy timer's work, on the loop.
func (r *replica) antiEntropyTurn(time.Time) {
	r.antiEntropy()
	r.ae.Reset(r.aeDelay())
}

// aeDelay is the time to the next anti-entropy tick. While anti-entropy is
// off the loop looks again every second, for a reload that turns it on.
func (r *replica) aeDelay() time.Duration {
	if d := r.s.Spec().AntiEntropyInterval; d > 0 {
		return d
	}
	return time.Second
}

// begin sends discover to at most maxDiscover random live peers, and a
// notice to every node, so that those with members send them.
func (r *replica) begin() {
	var live []*peer
	for _, p := range r.list {
		if p.live {
			live = append(live, p)
		}
	}
	r.rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	now := time.Now()
	var asked []string
	for i, p := range live {
		if i < maxDiscover {
			p.want |= wantDiscover
			r.flush(p, now)
			asked = append(asked, p.node)
			// A node that runs no scope of the entry drops the
			// discover; the hello's answer says so, and the first
			// sync stops waiting for it.
			r.probe(p, false)
			continue
		}
		// The others are only asked which process is their scope: a
		// hello each, no state.
		r.probe(p, false)
	}
	if err := r.d.c.Gossip(notice(r.id, asked, r.self)); err != nil {
		r.log.Debug("pg: start notice not sent", "error", err)
	}
	r.awaitInitial(live, len(asked))
}

// localChange records a change of this node's members.
func (r *replica) localChange(ev pgscope.Event) {
	g := ev.Group
	switch ev.Kind {
	case pgscope.MemberJoined:
		r.local[g] = append(r.local[g], ev.PIDs...)
	case pgscope.MemberLeft:
		left := r.local[g]
		for _, pid := range ev.PIDs {
			// The latest copy goes, as in the scope.
			if i := slices.Index(left, pid); i >= 0 {
				for j := len(left) - 1; j >= i; j-- {
					if left[j] == pid {
						left = slices.Delete(left, j, j+1)
						break
					}
				}
			}
		}
		if len(left) == 0 {
			delete(r.local, g)
		} else {
			r.local[g] = left
		}
	default:
		return
	}
	r.synced = ""
	r.pending = append(r.pending, pgscope.Op{Leave: ev.Kind == pgscope.MemberLeft, Group: g, PIDs: ev.PIDs})
}

// maxKeptOps bounds the pg.ops buffer a replica keeps between fan-outs.
const maxKeptOps = 4 << 10

// sendPending fans the gathered local changes out, in one message, to
// every peer: the live members and every node heard from before (a node
// that the membership has not reported yet still gets them).
func (r *replica) sendPending() {
	if len(r.pending) == 0 {
		return
	}
	if len(r.list) == 0 {
		clear(r.pending)
		r.pending = r.pending[:0]
		return
	}
	// Encoded once, into the replica's buffer, which the envelope of each
	// peer's frame copies as it is sent (*wire.Bytes): no string is made
	// of it, and the next fan-out reuses it.
	b := append(r.ops[:0], protoVersion)
	for _, o := range r.pending {
		b = appendOp(b, o)
	}
	r.ops = b
	clear(r.pending)
	r.pending = r.pending[:0]
	msg := process.Message{From: r.self, Topic: topicOps, Payload: &r.ops}
	// The clock is read only if a peer needs it (see send): not for a
	// change that goes out to peers all well.
	var now time.Time
	for _, p := range r.list {
		if p.absent {
			continue
		}
		if !p.told && p.want == 0 {
			// Never sent the whole state: it goes instead of the ops (it
			// holds them). A scope that gets ops from a process it does
			// not know yet asks for the whole state when it has verified
			// the sender (a discover, which also carries its own, and
			// which this node answers with its whole state): after nodes
			// start together, a second exchange of both states for nearly
			// every pair, of which one is enough. A state it gets first
			// leaves it nothing to ask for.
			p.want = wantSync
		}
		if p.want != 0 {
			// Owed the whole state, which carries this change too. A peer
			// whose retries ran out starts over with a new change.
			if p.timer == nil {
				p.attempt = 0
				if now.IsZero() {
					now = time.Now()
				}
				r.flush(p, now)
			}
			continue
		}
		if r.send(p, msg, now) {
			r.met.sentOps.Inc()
		}
	}
	if cap(r.ops) > maxKeptOps {
		r.ops = nil // a burst's buffer is not kept
	}
}

// syncPayload returns the encoded local state.
func (r *replica) syncPayload() string {
	if r.synced == "" {
		r.synced = string(appendSync([]byte{protoVersion}, r.local))
	}
	return r.synced
}

// send sends m to p's scope unless p's breaker is open; a failure counts
// against the breaker, and p is then owed the whole state, retried with
// backoff. A zero now is read from the clock when the breaker needs it.
func (r *replica) send(p *peer, m process.Message, now time.Time) bool {
	sp := &r.spec
	if p.br.state != closed && now.IsZero() {
		now = time.Now()
	}
	if !p.br.allow(now, sp.CircuitBreakerResetTime) {
		r.met.failed.Inc()
		p.want |= wantSync
		r.arm(p)
		r.changed = true
		return false
	}
	if err := r.node.SendName(p.node, r.id, m); err != nil {
		r.met.failed.Inc()
		if now.IsZero() {
			now = time.Now()
		}
		if p.br.failure(now, sp.CircuitBreakerFailures) {
			r.log.Warn("pg: circuit to a node opened", "peer", p.node, "failures", p.br.failures,
				"retry_after", sp.CircuitBreakerResetTime.String(), "error", err)
		} else {
			r.log.Debug("pg: send to a node failed", "peer", p.node, "topic", m.Topic, "error", err)
		}
		p.want |= wantSync
		r.arm(p)
		r.changed = true
		return false
	}
	if p.br.state != closed {
		r.changed = true
		r.log.Info("pg: circuit to a node closed", "peer", p.node)
	}
	p.br.success()
	return true
}

// flush sends p what it is owed (discover or sync) now; a node known to
// run no scope keeps it owed.
func (r *replica) flush(p *peer, now time.Time) {
	if p.absent {
		return
	}
	var m process.Message
	var sent interface{ Inc() }
	switch {
	case p.want&wantDiscover != 0:
		m = process.Message{From: r.self, Topic: topicDiscover, Payload: r.syncPayload()}
		sent = r.met.sentDiscover
	case p.want&wantSync != 0:
		m = process.Message{From: r.self, Topic: topicSync, Payload: r.syncPayload()}
		sent = r.met.sentSync
	default:
		return
	}
	owed := p.want
	p.want = 0
	if !r.send(p, m, now) {
		p.want |= owed
		return
	}
	if owed&wantDiscover != 0 {
		p.asked = now
	}
	p.told = true
	sent.Inc()
	r.disarm(p)
	p.attempt = 0
	r.changed = true
}

// arm schedules the next retry of what p is owed, with exponential
// backoff, unless one is scheduled or max_retries are spent (then the next
// local change, anti-entropy or a membership change tries again).
func (r *replica) arm(p *peer) {
	if p.timer != nil || p.attempt >= r.spec.MaxRetries {
		return
	}
	d := backoff.Policy{Initial: r.spec.RetryBaseDelay, Max: r.spec.RetryMaxDelay}.Delay(p.attempt)
	p.gen++
	node, gen := p.node, p.gen
	p.timer = time.AfterFunc(d, func() { r.submit(func(now time.Time) { r.retry(node, gen, now) }) })
}

func (r *replica) disarm(p *peer) {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
		p.gen++
	}
}

func (r *replica) retry(node string, gen uint64, now time.Time) {
	p := r.peers[node]
	if p == nil || p.gen != gen {
		return
	}
	p.timer = nil
	p.attempt++
	r.changed = true
	r.flush(p, now)
}

// antiEntropy sends the whole state to the next peer, in turn; a peer
// owed it whose retries ran out goes first (taken in turn too), since it
// is known to be behind.
func (r *replica) antiEntropy() {
	if r.spec.AntiEntropyInterval <= 0 || len(r.list) == 0 {
		return
	}
	n := len(r.list)
	p := r.list[r.aeNext%n]
	for i := range n {
		if q := r.list[(r.aeNext+i)%n]; q.want != 0 && q.timer == nil && !q.absent {
			p = q
			r.aeNext += i
			break
		}
	}
	r.aeNext++
	if p.absent {
		// Has its scope come since? A probe tells, and a scope found
		// gets a discover.
		r.probe(p, true)
		return
	}
	p.want |= wantSync
	r.flush(p, time.Now())
}

// message handles a protocol message from another node. Only a node's
// scope process speaks for it: a message from a process not yet known to
// be that is held until a hello to the node's scope (entry@node) has
// told which process that is, then applied in order, or dropped.
func (r *replica) message(m process.Message, now time.Time) {
	from := m.From
	if from.IsZero() || from.Node == r.node.Name() {
		r.met.unverified.Inc()
		return
	}
	switch m.Topic {
	case topicOps, topicSync, topicDiscover:
	default:
		r.met.malformed.Inc()
		r.once(from.Node, "topic", "pg: ignored a message of an unknown topic", "from", from.String(), "topic", m.Topic)
		return
	}
	p := r.peers[from.Node]
	if p == nil {
		p = r.addPeer(from.Node)
	}
	if p.pid == from {
		r.apply(p, m, now)
		return
	}
	if len(p.held) < maxHeld {
		p.held = append(p.held, m)
	} else {
		r.met.unverified.Inc()
		p.want |= wantDiscover
	}
	if p.verifying.IsZero() {
		r.hello(p, from)
	}
}

// hello asks p's node which process is its scope (an ask to entry@node:
// the reply comes from the process that holds the name), to verify from.
func (r *replica) hello(p *peer, from process.PID) {
	p.verifying = from
	r.sendHello(p, from)
}

// probe asks p's node which process is its scope, to learn whether it runs
// one (a node that does not is sent nothing) and to watch it; with
// discover, a scope it finds is sent a discover.
func (r *replica) probe(p *peer, discover bool) {
	p.probeAsks = p.probeAsks || discover
	if p.probing {
		return
	}
	p.probing, p.noticed = true, false
	r.sendHello(p, process.PID{})
}

func (r *replica) sendHello(p *peer, asked process.PID) {
	r.changed = true
	t := &helloTarget{r: r, node: p.node, asked: asked}
	timeout := r.spec.ProtocolTimeout
	node := p.node
	t.timer.Store(time.AfterFunc(timeout, func() {
		t.Settle(0, process.PID{}, nil, fmt.Errorf("hello %s@%s after %s: %w", r.id, node, timeout, process.ErrTimeout))
	}))
	m := process.Message{From: r.self, Topic: topicHello, Payload: string([]byte{protoVersion})}.
		WithReplyDeadline(t, 0, time.Now().Add(timeout))
	r.met.sentHello.Inc()
	if err := r.node.SendName(p.node, r.id, m); err != nil {
		t.Settle(0, process.PID{}, nil, err)
	}
}

// helloTarget settles a hello once, and hands the answer to the loop.
type helloTarget struct {
	r     *replica
	node  string
	asked process.PID
	timer atomic.Pointer[time.Timer]
	done  atomic.Bool
}

func (t *helloTarget) Settle(_ uint64, from process.PID, _ any, err error) bool {
	if !t.done.CompareAndSwap(false, true) {
		return false
	}
	if tm := t.timer.Load(); tm != nil {
		tm.Stop()
	}
	a := &answer{node: t.node, pid: t.asked, from: from, err: err}
	t.r.submit(func(now time.Time) { t.r.verified(a, now) })
	return true
}

// answer is a hello's answer: the process that holds the scope's name on
// node (from), or why there is none known (err); pid is the sender the
// hello was to verify, zero for a probe.
type answer struct {
	node      string
	pid, from process.PID
	err       error
}

// verified handles a hello's answer: from is the node's scope process.
func (r *replica) verified(it *answer, now time.Time) {
	p := r.peers[it.node]
	if p == nil {
		return
	}
	if it.pid.IsZero() {
		r.probed(p, it, now)
		return
	}
	if p.verifying != it.pid {
		return
	}
	r.changed = true
	if it.err != nil || it.from.IsZero() || it.from.Node != p.node {
		held := p.held
		p.held, p.verifying = nil, process.PID{}
		r.met.unverified.Add(float64(len(held)))
		if it.err != nil && !errors.Is(it.err, process.ErrNameNotFound) {
			// Not known either way: what it sent is lost, ask for it all.
			// It spoke just now, so this is a new attempt with retries of
			// its own: retries spent on it earlier (when it was not up
			// yet, as when nodes start together) would leave it to
			// anti-entropy.
			r.log.Debug("pg: could not verify a node's scope", "peer", p.node, "error", it.err)
			p.want |= wantDiscover
			p.attempt = 0
			r.arm(p)
			return
		}
		if errors.Is(it.err, process.ErrNameNotFound) {
			// No scope runs there (it stopped: its node is leaving, or
			// its entry was removed): what it sent last is moot, not
			// forged.
			r.log.Debug("pg: dropped messages of a scope that no longer runs", "peer", p.node, "from", it.pid.String())
		} else {
			r.once(p.node, "unverified", "pg: ignored messages from a process that is not the node's scope",
				"from", it.pid.String(), "error", it.err)
		}
		r.dropIfIdle(p)
		return
	}
	r.setScope(p, it.from)
	p.absent = false
	r.release(p, now)
	// Ask for its whole state, unless a discover's answer is on its way.
	if !p.synced && now.Sub(p.asked) > r.spec.ProtocolTimeout {
		p.want |= wantDiscover
		r.flush(p, now)
	}
}

// release applies the messages held from p's scope process, in order, and
// drops those of any other process, now that its scope is known. It runs
// whenever the scope becomes known, whichever answer tells first: a
// message the scope sends next is applied at once, and must not overtake
// the older ones still held. A hello still on its way is then moot.
func (r *replica) release(p *peer, now time.Time) {
	held := p.held
	p.held, p.verifying = nil, process.PID{}
	for _, m := range held {
		if m.From == p.pid {
			r.apply(p, m, now)
			continue
		}
		r.met.unverified.Inc()
		r.once(p.node, "unverified", "pg: ignored messages from a process that is not the node's scope",
			"from", m.From.String(), "scope", p.pid.String())
	}
}

// probed handles a probe's answer.
func (r *replica) probed(p *peer, it *answer, now time.Time) {
	discover := p.probeAsks
	p.probing, p.probeAsks = false, false
	r.changed = true
	switch {
	case it.err == nil && !it.from.IsZero() && it.from.Node == p.node:
		r.setScope(p, it.from)
		p.absent = false
		r.release(p, now)
		if discover && !p.synced {
			p.want |= wantDiscover
		}
		r.flush(p, now)
	case errors.Is(it.err, process.ErrNameNotFound) && p.noticed:
		// Its start notice came while the probe was out: the answer may
		// have been made before its scope ran, and must not mark it
		// absent (nothing would be sent to it until it spoke). Ask again.
		r.probe(p, discover)
	case errors.Is(it.err, process.ErrNameNotFound):
		// No scope there (yet): nothing is sent until it announces
		// itself, sends something, or a probe finds it. A discover it
		// was to get stays owed: its start notice sends it.
		p.absent = true
		if discover && !p.synced {
			p.want |= wantDiscover
		}
	default:
		r.log.Debug("pg: could not reach a node's scope", "peer", p.node, "error", it.err)
		if discover {
			p.want |= wantDiscover
			r.arm(p)
		}
	}
}

// setScope records pid as p's scope process and monitors it. A different
// process than before means that scope stopped (or its node restarted):
// the members it had are gone.
func (r *replica) setScope(p *peer, pid process.PID) {
	if p.pid == pid {
		return
	}
	if !p.pid.IsZero() {
		if p.monitored {
			r.node.Demonitor(r.self, p.pid)
		}
		r.nodeDown(p.node)
		// The new scope knows none of this node's members.
		p.told, p.toldTo = false, process.PID{}
	}
	p.pid, p.synced, p.monitored = pid, false, false
	r.monitor(p)
	r.changed = true
}

func (r *replica) monitor(p *peer) {
	if err := r.node.Monitor(r.self, p.pid); err == nil {
		p.monitored = true
	}
}

// apply applies a message from p's verified scope to the scope.
func (r *replica) apply(p *peer, m process.Message, now time.Time) {
	p.heard.Store(now.UnixNano())
	if !p.monitored {
		r.monitor(p)
	}
	if p.br.state != closed {
		// Its scope is up and talking: a breaker opened by sends that
		// failed before it was (nodes starting together) starts afresh,
		// with fresh retries, and what it is owed goes now (after this
		// message: a discover's answer is sent below).
		p.br, p.attempt = breaker{}, 0
		r.changed = true
		defer r.flush(p, now)
	}
	switch m.Topic {
	case topicOps:
		ops, pids, err := decodeOps(r.opsBuf[:0], r.pidsBuf[:0], m.Payload, m.From)
		r.pidsBuf = pids[:0]
		if err != nil {
			r.bad(p, m, err)
			return
		}
		err = r.s.OnLoop().ApplyOps(p.node, ops)
		clear(ops)
		r.opsBuf = ops[:0]
		if err != nil {
			r.applyFailed(p, err)
			return
		}
		r.met.recvOps.Inc()
	case topicSync, topicDiscover:
		groups, err := decodeSync(m.Payload, m.From)
		if err != nil {
			r.bad(p, m, err)
			return
		}
		if err := r.s.OnLoop().ApplySync(p.node, groups); err != nil {
			r.applyFailed(p, err)
			return
		}
		if !p.synced {
			p.synced = true
			r.changed = true
		}
		if m.Topic == topicSync {
			r.met.recvSync.Inc()
			return
		}
		r.met.recvDiscover.Inc()
		p.want |= wantSync
		r.flush(p, now)
	}
}

// bad counts a message from a verified peer that does not decode.
func (r *replica) bad(p *peer, m process.Message, err error) {
	if errors.Is(err, errVersion) {
		r.met.version.Inc()
	} else {
		r.met.malformed.Inc()
	}
	r.once(p.node, "bad", "pg: dropped a message from a node's scope", "topic", m.Topic, "error", err)
}

// applyFailed handles an update the scope refused (a group it does not
// take): what the peer sent is lost, so it is asked for all of it.
func (r *replica) applyFailed(p *peer, err error) {
	r.log.Warn("pg: could not apply a node's update; asking it for its whole state", "peer", p.node, "error", err)
	p.synced = false
	p.want |= wantDiscover
	p.attempt = 0
	r.arm(p)
	r.changed = true
}

// down handles the exit of a peer's scope process.
func (r *replica) down(pid process.PID, reason error) {
	p := r.peers[pid.Node]
	if p == nil || p.pid != pid {
		return
	}
	p.monitored = false
	r.changed = true
	if errors.Is(reason, process.ErrNoConnection) || errors.Is(reason, process.ErrUnreachable) {
		// The connection broke, and what was in flight either way is
		// lost; the node may well be back soon. Its members stay until
		// the membership says it left; both states are exchanged again.
		p.synced = false
		p.want |= wantDiscover
		p.attempt = 0
		r.arm(p)
		return
	}
	// The scope itself stopped: its members went with it, and nothing is
	// sent there until a scope runs there again. A probe asks whether one
	// does already: the process may have been an old run's, named by a
	// start notice relayed late, after the new run's own notice.
	p.pid, p.synced, p.absent, p.told, p.toldTo = process.PID{}, false, true, false, process.PID{}
	r.nodeDown(p.node)
	if p.live {
		r.probe(p, false)
	}
	r.dropIfIdle(p)
}

// member handles a membership change.
func (r *replica) member(node string, up bool, now time.Time) {
	if !up {
		r.nodeDown(node)
		if p := r.peers[node]; p != nil {
			r.deletePeer(p)
		}
		return
	}
	p := r.peers[node]
	if p == nil {
		p = r.addPeer(node)
	}
	// A node that joins (or comes back) gets the whole state, and is
	// asked for its own; its breaker starts afresh. Both nodes see the
	// other join: the one whose name sorts first sends the discover, and
	// its answer carries the other's state, so the two exchange their
	// states once. (A scope that starts later announces itself.)
	// A node heard from before the membership reported it could not be
	// answered yet: what it is owed goes now. One whose scope is not known
	// is probed first, so a node without the scope is sent nothing.
	p.live, p.br, p.absent = true, breaker{}, false
	r.changed = true
	if at, ok := r.noticed[node]; ok {
		// Its scope's start notice came first: it is owed a sync.
		delete(r.noticed, node)
		if now.Sub(at) <= r.spec.ProtocolTimeout && len(r.local) > 0 {
			p.want |= wantSync
		}
	}
	first := r.node.Name() < node
	p.attempt = 0
	r.disarm(p)
	if p.pid.IsZero() {
		r.probe(p, first)
		r.flush(p, now)
		return
	}
	if first {
		p.want |= wantDiscover
	}
	r.flush(p, now)
}

// notice handles another node's start notice: a scope that just started
// knows nobody's members, so this node sends its own, if it has any. pid is
// that scope's process (zero from an older node).
func (r *replica) notice(node string, pid process.PID, now time.Time) {
	p := r.peers[node]
	if p == nil || !p.live {
		// Not a live member: a notice that outran the node's join, or a
		// relay that outlived the node (a node that joins gets the
		// broadcasts still queued on its seed, those of nodes that left
		// before it joined). Nothing is sent to a node not known to be
		// there: one that joins is sent the sync owed when it does.
		r.rememberNotice(node, now)
		return
	}
	// Its scope just started: it is reachable now, whatever failed
	// before (sends to a node whose scope, or whose transport, was not
	// up yet open its breaker when nodes start together).
	p.absent, p.br = false, breaker{}
	p.noticed = p.probing
	r.changed = true
	if p.pid.IsZero() && !pid.IsZero() {
		// Its node names its scope's process: what that sends is applied
		// at once, without a hello to verify it (after nodes start
		// together, a hello for nearly every pair, answered from behind
		// the messages queued on the peer's loop). A process known
		// already is kept: a notice may be an old run's, relayed late.
		r.setScope(p, pid)
		r.release(p, now)
	}
	if !p.synced && !p.asked.IsZero() {
		// This scope asked it for its state before (a discover), and
		// has not got it: the ask may have reached its node before its
		// scope ran (nodes starting together: it saw us join only after
		// its scope started, so neither its join nor its start asks us),
		// and was dropped there. Ask again, now that it runs.
		p.want |= wantDiscover
	}
	if len(r.local) > 0 && (pid.IsZero() || p.toldTo != pid) {
		p.want |= wantSync
	}
	if p.want == 0 {
		return
	}
	p.attempt = 0
	r.disarm(p)
	r.flush(p, now)
	if p.want == 0 && !pid.IsZero() && len(r.local) > 0 {
		p.toldTo = pid
	}
}

// greeted handles a hello from another node's scope process (a probe or a
// verification): a scope that starts probes every live peer, over the
// transport, so its hello is its start notice too, one that gossip cannot
// lose. This node sends its whole state unless it has sent it since the
// peer's scope last changed (told); the notice of the process that got it
// sends nothing more. A process the hello names is not taken for the
// peer's scope (anyone may send a hello; what is sent goes to the scope's
// name), and once told a hello is sent nothing: it cannot make this node
// send its state again and again.
func (r *replica) greeted(from process.PID, now time.Time) {
	p := r.peers[from.Node]
	if p == nil || !p.live || p.told || len(r.local) == 0 {
		return
	}
	// It runs a scope, whatever failed before (as on a notice).
	p.absent, p.br = false, breaker{}
	p.noticed = p.probing
	p.want |= wantSync
	p.attempt = 0
	r.disarm(p)
	r.changed = true
	r.flush(p, now)
	if p.want == 0 {
		p.toldTo = from
	}
}

// rememberNotice records node's start notice until it joins, for a
// protocol timeout: a join later than that exchanges the states as any
// join does. Notices older than that are forgotten here, which bounds
// the map.
func (r *replica) rememberNotice(node string, now time.Time) {
	for n, at := range r.noticed {
		if now.Sub(at) > r.spec.ProtocolTimeout {
			delete(r.noticed, n)
		}
	}
	if r.noticed == nil {
		r.noticed = map[string]time.Time{}
	}
	r.noticed[node] = now
}

// nodeDown removes every member of node from the scope.
func (r *replica) nodeDown(node string) {
	if err := r.s.OnLoop().ApplyNodeDown(node); err != nil {
		r.log.Warn("pg: could not remove a departed node's members", "peer", node, "error", err)
	}
}

func (r *replica) addPeer(node string) *peer {
	p := &peer{node: node, heard: new(atomic.Int64)}
	r.peers[node] = p
	i, _ := slices.BinarySearchFunc(r.list, node, func(x *peer, n string) int { return strings.Compare(x.node, n) })
	r.list = slices.Insert(r.list, i, p)
	r.changed = true
	return p
}

func (r *replica) deletePeer(p *peer) {
	r.disarm(p)
	if !p.pid.IsZero() && p.monitored {
		r.node.Demonitor(r.self, p.pid)
	}
	delete(r.peers, p.node)
	if i := slices.Index(r.list, p); i >= 0 {
		r.list = slices.Delete(r.list, i, i+1)
	}
	r.changed = true
}

// dropIfIdle forgets a peer that is neither a live member nor a known
// scope, and is not being verified.
func (r *replica) dropIfIdle(p *peer) {
	if !p.live && p.pid.IsZero() && p.verifying.IsZero() {
		r.deletePeer(p)
	}
}

// once logs a problem with node once per kind of problem, and at debug
// level after that.
func (r *replica) once(node, kind, msg string, args ...any) {
	key := node + "\x00" + kind
	level := slog.LevelDebug
	if _, seen := r.logged[key]; !seen {
		r.logged[key] = struct{}{}
		level = slog.LevelWarn
	}
	r.log.Log(context.Background(), level, msg, append(args, "peer", node)...)
}
