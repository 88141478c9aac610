package cluster

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/proctor-run/proctor/internal/backoff"
	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/process"
)

// Timing configures failure detection, gossip and rejoining. The zero
// value of each field takes the default documented on it; docs/cluster.md
// explains the choice and the figures measured with it.
type Timing struct {
	// ProbeInterval is how often a node probes another (round robin).
	// Default: 400ms.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a probe waits for its ack before indirect
	// probes are tried. Default: 200ms.
	ProbeTimeout time.Duration
	// SuspicionMult sets how long a node stays suspect before it is
	// declared dead: SuspicionMult × max(1, log10(nodes)) ×
	// ProbeInterval, at least. Default: 3.
	SuspicionMult int
	// SuspicionMaxTimeoutMult bounds the suspicion timeout when no other
	// node confirms the suspicion: this multiple of the least. Default: 2.
	SuspicionMaxTimeoutMult int
	// GossipInterval and GossipNodes: how often, and to how many nodes,
	// queued gossip goes out. Defaults: 100ms and 3.
	GossipInterval time.Duration
	GossipNodes    int
	// RetransmitMult: each broadcast is sent RetransmitMult × log10(nodes+1)
	// times. Default: 3.
	RetransmitMult int
	// PushPullInterval is how often a full state sync runs with one
	// random node. Default: 10s.
	PushPullInterval time.Duration
	// TCPTimeout bounds memberlist's stream operations (a join, a
	// push/pull). Default: 2s.
	TCPTimeout time.Duration
	// RejoinMin and RejoinMax bound the backoff of join attempts to one
	// address (a seed, or a node last seen failed). Defaults: 250ms, 5s.
	RejoinMin, RejoinMax time.Duration
	// ForgetAfter is how long the address of a node declared dead is
	// retried. Default: 24h.
	ForgetAfter time.Duration
	// LeaveTimeout bounds the wait on shutdown for the members to
	// acknowledge the leave's announcement (half of it at most) and for
	// the leave message to go out, both together. Default: 2s.
	LeaveTimeout time.Duration
	// DeadNodeReclaim is how soon a node of the same name at another
	// address may take the place of one declared dead (a restart on
	// another port). Default: 200ms: the restarted node has checked that
	// the old one does not answer (settleHolder), and waited for it to be
	// declared dead; longer only delays it.
	DeadNodeReclaim time.Duration
}

func (t *Timing) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	def(&t.ProbeInterval, 400*time.Millisecond)
	def(&t.ProbeTimeout, 200*time.Millisecond)
	defInt(&t.SuspicionMult, 3)
	defInt(&t.SuspicionMaxTimeoutMult, 2)
	def(&t.GossipInterval, 100*time.Millisecond)
	defInt(&t.GossipNodes, 3)
	defInt(&t.RetransmitMult, 3)
	def(&t.PushPullInterval, 10*time.Second)
	def(&t.TCPTimeout, 2*time.Second)
	def(&t.RejoinMin, 250*time.Millisecond)
	def(&t.RejoinMax, 5*time.Second)
	def(&t.ForgetAfter, 24*time.Hour)
	def(&t.LeaveTimeout, 2*time.Second)
	def(&t.DeadNodeReclaim, 200*time.Millisecond)
}

// Resolver turns a seed's host name into addresses (IPs). The default is
// net.DefaultResolver.LookupHost.
type Resolver func(ctx context.Context, host string) ([]string, error)

// membershipConfig is what the cluster gives the membership.
type membershipConfig struct {
	name    string
	bind    string
	advHost string // advertise host; "" lets memberlist choose
	seeds   []string
	key     []byte // gossip key; nil: unencrypted
	// transport returns the transport address to advertise, given the
	// IP memberlist advertises.
	transport func(adv net.IP) string
	meta      []byte
	creation  uint32 // the node's (process.Node.Creation), advertised
	timing    Timing
	resolve   Resolver
	gossip    func(memberlist.NodeAwareTransport) memberlist.NodeAwareTransport // Interpose.Gossip
	logWindow time.Duration                                                     // Options.LogWindow
	streams   StreamLimits
	log       *slog.Logger
	peerUp    func(Member)
	peerDown  func(Member)
	forget    func(name string)
}

// Membership is the cluster's view of its nodes, on memberlist (SWIM):
// who is alive, events as that changes, and gossip messages shared by
// every subsystem through one delegate. One goroutine owns the view;
// readers get snapshots.
type Membership struct {
	cfg  membershipConfig
	log  *slog.Logger
	ml   *memberlist.Memberlist
	addr string // advertised; read once (memberlist's own node struct changes under its lock)
	g    *gossip
	nt   *memberlist.NetTransport
	tr   *faultTransport // memberlist's transport: nt (interposed) behind the stream guard

	lp       *process.Loop // the loop: memberlist's events and callers' commands, in order
	stopLoop context.CancelFunc
	quit     chan struct{} // closed as the node leaves (with stopLoop)

	// owned by the loop
	members map[string]*Member   // every node seen but this one
	leaving map[string]time.Time // nodes that announced they leave
	heard   map[string]bool      // as this node leaves: the members that acknowledged its announcement
	subs    map[int]func(Event)
	nextSub int

	// published by the loop
	live  atomic.Pointer[[]Member] // alive members but this one, by name
	known atomic.Pointer[[]Member] // every node seen but this one, by name

	self       Meta                   // this node's metadata
	conflict   atomic.Pointer[error]  // ErrNameTaken, once another node is seen to hold this one's name
	holder     atomic.Pointer[holder] // the last member seen under this node's name that started first, until settled
	claims     atomic.Uint64          // how often such a member was seen
	heldBy     atomic.Bool            // the last state joined (NotifyMerge) held this node at its address
	stopRejoin chan struct{}
	rejoinDone chan struct{}
	refused    sync.Map // "name\x00reason" -> struct{}: logged once
	leaveOnce  sync.Once
	handedOut  atomic.Uint64 // calls of the delegate's GetBroadcasts: packets memberlist sent with broadcasts (leaveGossip)

	// Start's, then rejoin's (settleHolder): a holder of this node's name
	// that did not answer, and whether the others still ignore this node.
	silent          string
	silentChecked   time.Time
	displaced       bool
	displacedSince  time.Time
	displacedWarned bool
	holdsUs         map[string]bool // offer: the members whose state was seen to hold this node
}

func startMembership(cfg membershipConfig) (*Membership, error) {
	m := &Membership{
		cfg: cfg, log: cfg.log,
		lp: process.NewLoop(process.LoopOptions{}), quit: make(chan struct{}),
		members: map[string]*Member{}, leaving: map[string]time.Time{}, heard: map[string]bool{}, subs: map[int]func(Event){}, stopRejoin: make(chan struct{}), rejoinDone: make(chan struct{}),
	}
	m.live.Store(&[]Member{})
	m.known.Store(&[]Member{})
	host, portStr, err := net.SplitHostPort(cfg.bind)
	if err != nil {
		return nil, fmt.Errorf("cluster bind %q: %w", cfg.bind, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("cluster bind %q: bad port", cfg.bind)
	}
	mlog := log.New(memberlistLog{log: cfg.log, limit: &logging.Limiter{Window: cfg.logWindow}, quit: m.quit}, "", 0)
	m.nt, err = memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: port, Logger: mlog})
	if err != nil {
		return nil, fmt.Errorf("cluster bind %s: %w", cfg.bind, err)
	}
	advIP, _, err := m.nt.FinalAdvertiseAddr(cfg.advHost, m.nt.GetAutoBindPort())
	if err != nil {
		_ = m.nt.Shutdown()
		return nil, fmt.Errorf("cluster advertise address: %w", err)
	}
	m.self = localMeta(cfg.transport(advIP), time.Now(), cfg.creation)
	m.cfg.meta = m.self.encode()
	t := cfg.timing
	c := memberlist.DefaultLANConfig()
	c.Name = cfg.name
	c.BindAddr, c.BindPort = host, m.nt.GetAutoBindPort()
	c.AdvertiseAddr, c.AdvertisePort = cfg.advHost, c.BindPort
	var inner memberlist.NodeAwareTransport = m.nt
	if cfg.gossip != nil {
		inner = cfg.gossip(inner)
	}
	m.tr = &faultTransport{NodeAwareTransport: inner, m: m, streams: make(chan net.Conn), stop: make(chan struct{}),
		guard: newStreamGuard(cfg.streams, t.TCPTimeout, m.knownHost, func() int { return len(*m.known.Load()) + 1 }, cfg.log)}
	c.Transport = m.tr
	c.Logger = mlog
	c.ProbeInterval, c.ProbeTimeout = t.ProbeInterval, t.ProbeTimeout
	c.SuspicionMult, c.SuspicionMaxTimeoutMult = t.SuspicionMult, t.SuspicionMaxTimeoutMult
	c.GossipInterval, c.GossipNodes = t.GossipInterval, t.GossipNodes
	c.GossipToTheDeadTime = 5 * t.ProbeInterval * time.Duration(t.SuspicionMult)
	c.RetransmitMult = t.RetransmitMult
	c.PushPullInterval = t.PushPullInterval
	c.TCPTimeout = t.TCPTimeout
	c.IndirectChecks = 2
	c.DeadNodeReclaimTime = t.DeadNodeReclaim
	if cfg.key != nil {
		c.SecretKey = cfg.key
	}
	d := &delegate{m: m}
	c.Delegate, c.Events, c.Alive, c.Conflict, c.Merge = d, d, d, d, d
	m.g = newGossip(cfg.name, func() int { return len(*m.live.Load()) + 1 }, t.RetransmitMult)
	if _, err := m.g.register(kindMembership, m.membershipMsg, true); err != nil {
		return nil, err
	}
	// Known before memberlist starts: the alive filter tells this node's
	// own address from that of another node claiming its name.
	m.addr = net.JoinHostPort(advIP.String(), strconv.Itoa(c.AdvertisePort))
	loopCtx, stopLoop := context.WithCancel(context.Background())
	m.stopLoop = stopLoop
	go m.lp.Run(loopCtx)
	m.tr.run()
	m.ml, err = memberlist.Create(c)
	if err != nil {
		_ = m.tr.Shutdown()
		m.stop()
		return nil, fmt.Errorf("cluster membership: %w", err)
	}
	// One join at once, so that a name already taken in the cluster
	// fails the start (the seeds' state, merged during the join, shows
	// the member that holds it); the rejoin loop carries on from here.
	if seeds := m.seedAddrs(); len(seeds) > 0 {
		if _, err := m.ml.Join(seeds); err != nil {
			m.log.Debug("cluster: first join attempt failed; retrying in the background", "seeds", seeds, "error", err)
		}
	}
	if h := m.holder.Swap(nil); h != nil {
		m.settleHolder(h)
	}
	if err := m.Err(); err != nil {
		_ = m.ml.Shutdown()
		m.stop()
		return nil, err
	}
	go m.rejoin()
	return m, nil
}

// Name returns this node's name.
func (m *Membership) Name() string { return m.cfg.name }

// Addr returns the memberlist address this node advertises (host:port).
func (m *Membership) Addr() string { return m.addr }

// Members returns the live members other than this node, by name; a
// suspect node is a member until it is declared dead. It never waits.
func (m *Membership) Members() []Member { return slices.Clone(*m.live.Load()) }

// Member returns the live member named name.
func (m *Membership) Member(name string) (Member, bool) {
	live := *m.live.Load()
	i, ok := slices.BinarySearchFunc(live, name, func(x Member, n string) int { return strings.Compare(x.Name, n) })
	if !ok {
		return Member{}, false
	}
	return live[i], true
}

// Known returns every node this one has seen other than itself, live or
// not, by name: the live ones and those that failed or left since.
func (m *Membership) Known() []Member { return slices.Clone(*m.known.Load()) }

// Subscribe calls fn with every membership event from now on, in order,
// and returns the live members at that point (the events start from that
// snapshot). fn runs on the membership's goroutine: it must not block or
// call Subscribe (hand the event to a loop of your own). cancel stops the
// events; after it returns fn is not called again.
func (m *Membership) Subscribe(fn func(Event)) (members []Member, cancel func()) {
	type res struct {
		id      int
		members []Member
	}
	var r res
	if m.run(func() {
		m.nextSub++
		m.subs[m.nextSub] = fn
		r = res{m.nextSub, slices.Clone(*m.live.Load())}
	}) != nil {
		return m.Members(), func() {}
	}
	return r.members, func() { _ = m.run(func() { delete(m.subs, r.id) }) }
}

// Handle registers h for gossip messages of kind. The returned function
// unregisters it. A kind has one handler at a time (ErrKindTaken).
func (m *Membership) Handle(kind Kind, h Handler) (unregister func(), err error) {
	if kind == kindMembership {
		return nil, errors.New("gossip kind 0 is the membership's own")
	}
	return m.g.handle(kind, h)
}

// Broadcast and SendTo refuse kind 0 (the membership's own) too.
func checkKind(kind Kind) error {
	if kind == kindMembership {
		return errors.New("gossip kind 0 is the membership's own")
	}
	return nil
}

// Broadcast sends payload to every live node, best effort, through
// memberlist's gossip queue: each receiver relays it once more, so it
// reaches every node of a large cluster quickly, though not certainly (a
// broadcast is not retried: carry state that matters in full syncs too).
// The payload is at most MaxGossipPayload bytes.
func (m *Membership) Broadcast(kind Kind, payload []byte) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	return m.g.broadcast(kind, payload)
}

// SendTo sends payload to one live node, best effort (a UDP packet, no
// retry, no order). The payload is at most MaxGossipPayload bytes. A node
// that is not a live member is an error wrapping process.ErrUnreachable.
func (m *Membership) SendTo(node string, kind Kind, payload []byte) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	return m.sendTo(node, kind, payload)
}

func (m *Membership) sendTo(node string, kind Kind, payload []byte) error {
	mem, ok := m.Member(node)
	if !ok {
		return errNoMember(node)
	}
	return m.sendToAddr(node, mem.Gossip, kind, payload)
}

// sendToAddr sends payload to node at its gossip address addr, best
// effort, whether it is a live member or not.
func (m *Membership) sendToAddr(node, addr string, kind Kind, payload []byte) error {
	b, err := m.g.message(kind, false, payload)
	if err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	p, _ := strconv.Atoi(port)
	return m.ml.SendBestEffort(&memberlist.Node{Name: node, Addr: net.ParseIP(host), Port: uint16(p)}, b)
}

// GossipDropped counts gossip messages dropped on arrival: malformed, of
// another version, or of a kind nobody handles.
func (m *Membership) GossipDropped() uint64 { return m.g.dropped.Load() }

// leave leaves the cluster gracefully (others see StateLeft within a
// gossip round or two) and stops the membership.
func (m *Membership) leave() error {
	var err error
	m.leaveOnce.Do(func() {
		// No join in flight, then every node memberlist has told the
		// loop about is in the snapshot the announcement goes to.
		close(m.stopRejoin)
		<-m.rejoinDone
		m.settle()
		// The acknowledgements get half the leave's time at most, so
		// that memberlist's leave still has the other half to go out.
		start, timeout := time.Now(), m.cfg.timing.LeaveTimeout
		deadline := start.Add(timeout)
		m.announceLeave(start.Add(timeout / 2))
		m.stop()
		m.leaveGossip(deadline)
		if e := m.ml.Shutdown(); e != nil && err == nil {
			err = e
		}
		<-m.lp.Done()
	})
	return err
}

// leaveGossip queues memberlist's leave message (a dead message about
// this node from this node) and waits until memberlist has handed out its
// broadcasts as often as it retransmits a message (RetransmitMult ×
// log10(n+1) times, counted in the calls of the delegate's GetBroadcasts,
// which come with every gossip and probe packet, so a loaded machine's late
// rounds are waited for), until deadline (the leave's, LeaveTimeout from
// its start) at most — less once no other node is alive in memberlist's
// view (they left too: nobody is left to tell).
// memberlist's own wait (Leave with a timeout) waits for that message to
// be sent that often, which never happens when every other node leaves at
// the same moment: a rollout's or a test's stop waited out the timeout and
// warned.
func (m *Membership) leaveGossip(deadline time.Time) {
	t := m.cfg.timing
	limit := uint64(t.RetransmitMult * int(math.Ceil(math.Log10(float64(m.ml.NumMembers()+1)))))
	start := m.handedOut.Load()
	// Leave's own wait ends at once: the broadcast is queued either way.
	_ = m.ml.Leave(time.Nanosecond)
	tick := time.NewTicker(t.GossipInterval / 4)
	defer tick.Stop()
	for m.handedOut.Load()-start < limit && time.Now().Before(deadline) && m.othersAlive() {
		<-tick.C
	}
}

// othersAlive reports whether memberlist sees another node alive (or
// suspect).
func (m *Membership) othersAlive() bool { return len(m.othersInView()) > 0 }

// othersInView returns the names of the other nodes memberlist sees alive
// (or suspect).
func (m *Membership) othersInView() map[string]bool {
	out := map[string]bool{}
	for _, n := range m.ml.Members() {
		if n.Name != m.cfg.name {
			out[n.Name] = true
		}
	}
	return out
}

// The membership's own messages (kind 0): the first payload byte says
// what.
const (
	msgLeaving byte = 1 // the sender is about to leave
	msgHeard   byte = 2 // the sender has taken note of this node's msgLeaving
)

// announceLeave tells every live member that this node is about to leave:
// memberlist's events do not tell a node that left from one that failed,
// and the two differ (a failed node's address is retried, its counters
// kept). It waits, until deadline at most, for every member that
// acknowledges an announcement (Meta.LeaveAcks) and that memberlist still
// sees alive to have done so, resending to the others every
// GossipInterval: memberlist's leave (its dead message) must not reach a
// member before the announcement has: memberlist handles the messages
// waiting in its queue last in, first out (getNextMessage), so a busy
// member that had both waiting took the leave first, and the node for
// failed (TestLeaveIsNotTakenForAFailure). A member that is leaving too stops acknowledging
// once its own loop stops; memberlist then sees it gone, and it is not
// waited for.
func (m *Membership) announceLeave(deadline time.Time) {
	announce := func(to []Member) {
		for _, mem := range to {
			_ = m.sendToAddr(mem.Name, mem.Gossip, kindMembership, []byte{msgLeaving})
		}
	}
	// Every live member is told, also one of an older build, which does
	// not acknowledge.
	announce(m.Members())
	sent := time.Now()
	tick := time.NewTicker(m.cfg.timing.GossipInterval / 4)
	defer tick.Stop()
	for {
		waiting := m.unheard()
		if len(waiting) == 0 || time.Now().After(deadline) {
			return
		}
		if time.Since(sent) >= m.cfg.timing.GossipInterval {
			announce(waiting)
			sent = time.Now()
		}
		<-tick.C
	}
}

// unheard returns the live members that acknowledge an announcement of
// this node's leave, have not acknowledged it yet, and that memberlist
// still sees alive.
func (m *Membership) unheard() []Member {
	inView := m.othersInView()
	var out []Member
	if m.run(func() {
		for _, mem := range *m.live.Load() {
			if inView[mem.Name] && mem.Meta.LeaveAcks && !m.heard[mem.Name] {
				out = append(out, mem)
			}
		}
	}) != nil {
		return nil
	}
	return out
}

// settle waits until the loop has run everything submitted so far.
func (m *Membership) settle() { _ = m.run(func() {}) }

// run runs fn on the loop and waits for it; an error (ErrLoopStopped)
// means the membership stopped first, and fn did not run.
func (m *Membership) run(fn func()) error {
	return process.RunOn(context.Background(), m.lp, process.CommandFunc(func() error { fn(); return nil }), process.CallOptions{})
}

// stop ends the loop: what is submitted from now on is dropped.
func (m *Membership) stop() {
	close(m.quit)
	m.stopLoop()
}

// membershipMsg handles a message of kind 0 (on memberlist's goroutine).
func (m *Membership) membershipMsg(from string, payload []byte) {
	if len(payload) != 1 {
		return
	}
	// Only of nodes this one knows: a made-up name takes no room (one
	// not known yet is told again by its resends).
	switch payload[0] {
	case msgLeaving:
		m.submit(func() {
			mem := m.members[from]
			if mem == nil {
				return
			}
			m.leaving[from] = time.Now()
			// Answered by the loop, once noted: whatever memberlist tells
			// of the node from now on comes after.
			_ = m.sendToAddr(from, mem.Gossip, kindMembership, []byte{msgHeard})
		})
	case msgHeard:
		m.submit(func() {
			if m.members[from] != nil {
				m.heard[from] = true
			}
		})
	}
}

// submit queues fn for the loop; false once the loop has stopped.
func (m *Membership) submit(fn func()) bool { return m.lp.Submit(fn) == nil }

// The loop's handlers of memberlist's events.

func (m *Membership) joined(mem Member) {
	if prev := m.members[mem.Name]; prev != nil && prev.State == StateAlive {
		// Alive twice (memberlist saw it back before its death reached
		// this node's loop): an update.
		m.updated(mem)
		return
	}
	mem.State, mem.Since = StateAlive, time.Now()
	m.members[mem.Name] = &mem
	m.log.Info("cluster: node joined", "peer", mem.Name, "gossip", mem.Gossip, "transport", mem.Transport)
	// The transport first: whoever sees the member in the snapshot can
	// send to it at once.
	m.cfg.peerUp(mem)
	m.publish()
	m.emit(Event{Kind: MemberJoined, Member: mem})
}

func (m *Membership) left(name string, state MemberState) {
	mem := m.members[name]
	if mem == nil || mem.State == StateDead || mem.State == StateLeft {
		return
	}
	if at, ok := m.leaving[name]; ok {
		delete(m.leaving, name)
		if time.Since(at) < time.Minute {
			state = StateLeft
		}
	}
	next := *mem
	next.State, next.Since = state, time.Now()
	m.members[name] = &next
	m.publish()
	if state == StateDead {
		// Failure detection declared it dead (killed, cut off): an
		// operator's news, unlike a graceful leave.
		m.log.Warn("cluster: node gone", "peer", name, "state", string(state))
	} else {
		m.log.Info("cluster: node gone", "peer", name, "state", string(state))
	}
	m.cfg.peerDown(next)
	m.emit(Event{Kind: MemberLeft, Member: next})
}

func (m *Membership) updated(mem Member) {
	prev := m.members[mem.Name]
	if prev == nil || prev.State != StateAlive {
		m.joined(mem)
		return
	}
	if prev.Meta.Creation != 0 && mem.Meta.Creation != prev.Meta.Creation {
		// A new incarnation under the name (a restart the failure
		// detector did not see): the old one is gone, with its
		// processes and its connection, and the new one joins.
		m.log.Info("cluster: node restarted", "peer", mem.Name, "creation", mem.Meta.Creation, "previous", prev.Meta.Creation)
		m.left(mem.Name, StateDead)
		m.joined(mem)
		return
	}
	mem.State, mem.Since = StateAlive, prev.Since
	m.members[mem.Name] = &mem
	if mem.Transport != prev.Transport {
		m.cfg.peerUp(mem)
	}
	m.publish()
	m.emit(Event{Kind: MemberUpdated, Member: mem})
}

// prune forgets the nodes that failed or left longer than after ago, so a
// cluster whose nodes come and go under new names does not grow.
func (m *Membership) prune(after time.Duration) {
	n := 0
	for name, mem := range m.members {
		if mem.State != StateAlive && time.Since(mem.Since) > after {
			delete(m.members, name)
			m.cfg.forget(name)
			n++
		}
	}
	if n > 0 {
		m.publish()
	}
}

func (m *Membership) emit(e Event) {
	for _, fn := range m.subs {
		fn(e)
	}
}

func (m *Membership) publish() {
	live := make([]Member, 0, len(m.members))
	known := make([]Member, 0, len(m.members))
	for _, mem := range m.members {
		known = append(known, *mem)
		if mem.State == StateAlive {
			live = append(live, *mem)
		}
	}
	byName := func(a, b Member) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(live, byName)
	slices.SortFunc(known, byName)
	m.live.Store(&live)
	m.known.Store(&known)
}

// memberOf makes a Member of a live memberlist node (memberlist reports
// joins and updates of live nodes only); an error when its metadata is not
// one this node speaks.
func memberOf(n *memberlist.Node) (Member, error) {
	meta, err := decodeMeta(n.Meta)
	if err != nil {
		return Member{}, err
	}
	return Member{Name: n.Name, Gossip: n.Address(), Transport: meta.Transport, Meta: meta, State: StateAlive}, nil
}

// refuse logs, once per node and reason, that a node is not taken as a
// member.
func (m *Membership) refuse(name string, err error) {
	if _, seen := m.refused.LoadOrStore(name+"\x00"+err.Error(), struct{}{}); !seen {
		m.log.Warn("cluster: ignoring a node this node cannot talk to", "peer", name, "error", err)
	}
}

// rejoin joins the seeds while this node is alone, and retries the
// address of every node last seen failed (not left) until it is back or
// ForgetAfter has passed: memberlist never rejoins by itself after a
// partition heals, and after one the seeds may be gone. Each address has
// its own backoff.
func (m *Membership) rejoin() {
	defer close(m.rejoinDone)
	t := m.cfg.timing
	type attempt struct {
		next    time.Time
		backoff backoff.Backoff
	}
	policy := backoff.Policy{Initial: t.RejoinMin, Max: t.RejoinMax}
	tries := map[string]*attempt{}
	alone := true
	lastPrune := time.Now()
	for {
		now := time.Now()
		if now.Sub(lastPrune) > time.Minute {
			lastPrune = now
			m.submit(func() { m.prune(t.ForgetAfter) })
		}
		if h := m.holder.Swap(nil); h != nil {
			m.settleHolder(h)
		}
		var targets []string
		live := *m.live.Load()
		if m.displaced && m.Err() == nil {
			// Offer this node's state (a push/pull) to one other node a
			// round until one takes it: one that saw no claim on the name.
			m.offer(live)
		}
		if len(live) == 0 {
			targets = append(targets, m.seedAddrs()...)
		} else {
			alone = false
		}
		liveNames := map[string]bool{}
		for _, mem := range live {
			liveNames[mem.Name] = true
		}
		for _, mem := range *m.known.Load() {
			if mem.State == StateDead && !liveNames[mem.Name] && now.Sub(mem.Since) < t.ForgetAfter {
				targets = append(targets, mem.Gossip)
			}
		}
		self := m.Addr()
		for _, addr := range targets {
			a := tries[addr]
			if a == nil {
				a = &attempt{backoff: backoff.New(policy)}
				tries[addr] = a
			}
			if addr == self || now.Before(a.next) {
				continue
			}
			n, err := m.ml.Join([]string{addr})
			if n > 0 {
				delete(tries, addr)
				if alone {
					m.log.Info("cluster: joined", "via", addr)
				}
				continue
			}
			retry := a.backoff.Next()
			a.next = time.Now().Add(retry)
			m.log.Debug("cluster: join attempt failed", "address", addr, "retry_in", retry.String(), "error", err)
		}
		for addr, a := range tries {
			if !slices.Contains(targets, addr) && now.Sub(a.next) > t.RejoinMax {
				delete(tries, addr)
			}
		}
		select {
		case <-m.stopRejoin:
			return
		case <-time.After(t.RejoinMin):
		}
	}
}

// offer joins the live members (or, with none, the seeds) while this
// node is displaced: the others ignore it while they hold its run before
// a restart alive, and take it, at its new address, once they have
// declared that one dead (DeadNodeReclaim). Joining is all memberlist
// offers: a node it ignores is neither gossiped to nor pushed to but
// every PushPullInterval. Each member is offered this node's state until
// its own state (the answer to a join, NotifyMerge) holds this node at
// its address: one that took it first does not gossip it to one that
// still held the old run suspect.
func (m *Membership) offer(live []Member) {
	if len(live) == 0 {
		if seeds := m.seedAddrs(); len(seeds) > 0 {
			_, _ = m.ml.Join(seeds)
		}
		return
	}
	if m.holdsUs == nil {
		m.holdsUs = map[string]bool{}
	}
	left := 0
	for _, mem := range live {
		if m.holdsUs[mem.Gossip] {
			continue
		}
		m.heldBy.Store(false)
		claims := m.claims.Load()
		if n, _ := m.ml.Join([]string{mem.Gossip}); n > 0 && m.heldBy.Load() && m.claims.Load() == claims {
			m.holdsUs[mem.Gossip] = true
			continue
		}
		left++
	}
	if left == 0 {
		m.displaced, m.holdsUs = false, nil
		m.log.Info("cluster: joined in place of this node before its restart", "members", len(live), "after", time.Since(m.displacedSince).String())
		return
	}
	// The old run is declared dead within seconds of its end; one that
	// is not, though it answers none of this node's pings, is alive
	// behind a network that lets this node reach the others but not it.
	if !m.displacedWarned && time.Since(m.displacedSince) > displacedWarning {
		m.displacedWarned = true
		m.log.Warn("cluster: the others still hold another member under this node's name, which answers none of this node's pings; this node is not a member until they declare it dead",
			"holder", m.silent, "waited", time.Since(m.displacedSince).String(), "not_taken_by", left)
	}
}

// displacedWarning is how long a node restarted on another address waits
// to be taken before it warns.
const displacedWarning = 30 * time.Second

// seedAddrs resolves the seeds: a host name that resolves to several
// addresses gives several seeds.
func (m *Membership) seedAddrs() []string {
	var out []string
	for _, s := range m.cfg.seeds {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			continue
		}
		if net.ParseIP(host) != nil {
			out = append(out, s)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.timing.TCPTimeout)
		ips, err := m.cfg.resolve(ctx, host)
		cancel()
		if err != nil {
			m.log.Debug("cluster: cannot resolve seed", "seed", s, "error", err)
			continue
		}
		for _, ip := range ips {
			out = append(out, net.JoinHostPort(ip, port))
		}
	}
	return out
}
