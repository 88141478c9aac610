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
	// LeaveTimeout bounds the wait for the leave message to go out on
	// shutdown. Default: 2s.
	LeaveTimeout time.Duration
	// DeadNodeReclaim is how soon a node of the same name at another
	// address may take the place of one declared dead (a restart on
	// another port). Default: 1s.
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
	def(&t.DeadNodeReclaim, time.Second)
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
	faults    *Faults
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
	tr   *faultTransport // memberlist's transport: nt behind the stream guard and the faults

	lp       *process.Loop // the loop: memberlist's events and callers' commands, in order
	stopLoop context.CancelFunc
	quit     chan struct{} // closed as the node leaves (with stopLoop)

	// owned by the loop
	members map[string]*Member   // every node seen but this one
	leaving map[string]time.Time // nodes that announced they leave
	subs    map[int]func(Event)
	nextSub int

	// published by the loop
	live  atomic.Pointer[[]Member] // alive members but this one, by name
	known atomic.Pointer[[]Member] // every node seen but this one, by name

	self       Meta                  // this node's metadata
	conflict   atomic.Pointer[error] // ErrNameTaken, once another node is seen to hold this one's name
	stopRejoin chan struct{}
	rejoinDone chan struct{}
	refused    sync.Map // "name\x00reason" -> struct{}: logged once
	leaveOnce  sync.Once
	handedOut  atomic.Uint64 // calls of the delegate's GetBroadcasts: packets memberlist sent with broadcasts (leaveGossip)
}

func startMembership(cfg membershipConfig) (*Membership, error) {
	m := &Membership{
		cfg: cfg, log: cfg.log,
		lp: process.NewLoop(process.LoopOptions{}), quit: make(chan struct{}),
		members: map[string]*Member{}, leaving: map[string]time.Time{}, subs: map[int]func(Event){}, stopRejoin: make(chan struct{}), rejoinDone: make(chan struct{}),
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
	mlog := log.New(memberlistLog{log: cfg.log, limit: &logging.Limiter{}, quit: m.quit}, "", 0)
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
	m.tr = &faultTransport{NodeAwareTransport: m.nt, m: m, streams: make(chan net.Conn), stop: make(chan struct{}),
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
	c.Delegate, c.Events, c.Alive, c.Conflict = d, d, d, d
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
	b, err := m.g.message(kind, false, payload)
	if err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(mem.Gossip)
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
		m.announceLeave()
		m.stop()
		m.leaveGossip()
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
// rounds are waited for), LeaveTimeout at most — less once no other node
// is alive in memberlist's view (they left too: nobody is left to tell).
// memberlist's own wait (Leave with a timeout) waits for that message to
// be sent that often, which never happens when every other node leaves at
// the same moment: a rollout's or a test's stop waited out the timeout and
// warned.
func (m *Membership) leaveGossip() {
	t := m.cfg.timing
	limit := uint64(t.RetransmitMult * int(math.Ceil(math.Log10(float64(m.ml.NumMembers()+1)))))
	start := m.handedOut.Load()
	// Leave's own wait ends at once: the broadcast is queued either way.
	_ = m.ml.Leave(time.Nanosecond)
	deadline := time.Now().Add(t.LeaveTimeout)
	tick := time.NewTicker(t.GossipInterval / 4)
	defer tick.Stop()
	for m.handedOut.Load()-start < limit && time.Now().Before(deadline) && m.othersAlive() {
		<-tick.C
	}
}

// othersAlive reports whether memberlist sees another node alive (or
// suspect).
func (m *Membership) othersAlive() bool {
	for _, n := range m.ml.Members() {
		if n.Name != m.cfg.name {
			return true
		}
	}
	return false
}

// The membership's own messages (kind 0): the first payload byte says
// what.
const msgLeaving byte = 1

// announceLeave tells every live member, best effort, that this node is
// about to leave: memberlist's events do not tell a node that left from one
// that failed, and the two differ (a failed node's address is retried).
func (m *Membership) announceLeave() {
	for _, mem := range m.Members() {
		_ = m.sendTo(mem.Name, kindMembership, []byte{msgLeaving})
	}
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
	if len(payload) == 1 && payload[0] == msgLeaving {
		m.submit(func() { m.leaving[from] = time.Now() })
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

// nameOf returns the node known at gossip address addr ("" if none).
func (m *Membership) nameOf(addr string) string {
	for _, mem := range *m.known.Load() {
		if mem.Gossip == addr {
			return mem.Name
		}
	}
	return ""
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
		backoff time.Duration
	}
	tries := map[string]*attempt{}
	alone := true
	lastPrune := time.Now()
	for {
		now := time.Now()
		if now.Sub(lastPrune) > time.Minute {
			lastPrune = now
			m.submit(func() { m.prune(t.ForgetAfter) })
		}
		var targets []string
		live := *m.live.Load()
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
				a = &attempt{backoff: t.RejoinMin}
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
			a.next = time.Now().Add(a.backoff)
			m.log.Debug("cluster: join attempt failed", "address", addr, "retry_in", a.backoff.String(), "error", err)
			a.backoff = min(2*a.backoff, t.RejoinMax)
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

// delegate is the one memberlist delegate: metadata, gossip messages,
// membership events, the alive filter and conflicts.
type delegate struct{ m *Membership }

func (d *delegate) NodeMeta(limit int) []byte {
	b := d.m.cfg.meta
	if len(b) > limit {
		d.m.log.Error("cluster: node metadata exceeds memberlist's limit", "bytes", len(b), "limit", limit)
		return nil
	}
	return b
}

func (d *delegate) NotifyMsg(b []byte) { d.m.g.receive(b) }
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	d.m.handedOut.Add(1)
	return d.m.g.queue.GetBroadcasts(overhead, limit)
}
func (d *delegate) LocalState(bool) []byte        { return nil }
func (d *delegate) MergeRemoteState([]byte, bool) {}

func (d *delegate) NotifyAlive(n *memberlist.Node) error {
	if n.Name == d.m.cfg.name {
		if n.Address() == d.m.addr {
			return nil
		}
		return d.m.nameClaimed(n)
	}
	if _, err := decodeMeta(n.Meta); err != nil {
		d.m.refuse(n.Name, err)
		return err
	}
	return nil
}

func (d *delegate) NotifyJoin(n *memberlist.Node)   { d.member(n, (*Membership).joined) }
func (d *delegate) NotifyUpdate(n *memberlist.Node) { d.member(n, (*Membership).updated) }

// member hands another node's news to the loop, if it is a node this one
// talks to.
func (d *delegate) member(n *memberlist.Node, apply func(*Membership, Member)) {
	if n.Name == d.m.cfg.name {
		return
	}
	mem, err := memberOf(n)
	if err != nil {
		d.m.refuse(n.Name, err)
		return
	}
	d.m.submit(func() { apply(d.m, mem) })
}

func (d *delegate) NotifyLeave(n *memberlist.Node) {
	if n.Name == d.m.cfg.name {
		return
	}
	// memberlist's node does not tell a leave from a failure: the
	// leaving node's announcement does (membershipMsg).
	name := n.Name
	d.m.submit(func() { d.m.left(name, StateDead) })
}

func (d *delegate) NotifyConflict(existing, other *memberlist.Node) {
	if _, seen := d.m.refused.LoadOrStore(existing.Name+"\x00conflict\x00"+other.Address(), struct{}{}); !seen {
		d.m.log.Error("cluster: two nodes claim one name; the newcomer is ignored", "peer", existing.Name,
			"existing", existing.Address(), "other", other.Address())
	}
}

// ErrNameTaken: another live member holds this node's name. Node names are
// unique in a cluster: the node that started first keeps its name, and the
// other fails (Start returns the error, or, when it is seen only later,
// Cluster.Err does).
var ErrNameTaken = errors.New("node name taken by another live member")

// Err returns ErrNameTaken (wrapped, naming the other node) once this
// node has seen another live member with its name that started first: it
// is not a member of the cluster, whose nodes ignore it.
func (m *Membership) Err() error {
	if e := m.conflict.Load(); e != nil {
		return *e
	}
	return nil
}

// nameClaimed handles an alive message of another node under this node's
// name (on memberlist's goroutine, under its lock): the node that started
// first keeps the name. Either way the message is refused.
func (m *Membership) nameClaimed(n *memberlist.Node) error {
	theirs, err := decodeMeta(n.Meta)
	first := err == nil && (theirs.Started.Before(m.self.Started) ||
		(theirs.Started.Equal(m.self.Started) && n.Address() < m.addr))
	if !first {
		err := fmt.Errorf("a node at %s claims this node's name; it is refused", n.Address())
		m.refuse(n.Name, err)
		return err
	}
	taken := fmt.Errorf("cluster: %w: %q is the name of the member at %s since %s; start this node under another name (if that member is this node before a restart on another address, it is declared dead within seconds: start again then)",
		ErrNameTaken, n.Name, n.Address(), theirs.Started.UTC().Format(time.RFC3339))
	if m.conflict.CompareAndSwap(nil, &taken) {
		m.log.Error("cluster: this node's name is taken; it is not a member of the cluster", "error", taken)
	}
	return taken
}

// knownHost reports whether host is the IP of a node this one knows (live
// or not): its streams are a member's, not a stranger's.
func (m *Membership) knownHost(host string) bool {
	for _, mem := range *m.known.Load() {
		if h, _, err := net.SplitHostPort(mem.Gossip); err == nil && h == host {
			return true
		}
	}
	return false
}

// StreamsShed counts memberlist streams closed at once: a StreamLimits
// bound was reached.
func (m *Membership) StreamsShed() uint64 { return m.tr.guard.shed.Load() }

// faultTransport is memberlist's network transport with the stream guard
// in front of what others open (StreamLimits) and the fault layer in front
// of what this node sends.
type faultTransport struct {
	memberlist.NodeAwareTransport
	m       *Membership
	guard   *streamGuard
	streams chan net.Conn // admitted inbound streams
	stop    chan struct{}
	halt    sync.Once
	wg      sync.WaitGroup
}

// StreamCh returns the inbound streams the guard admitted.
func (t *faultTransport) StreamCh() <-chan net.Conn { return t.streams }

// run starts the guard; Shutdown stops it.
func (t *faultTransport) run() {
	t.wg.Add(1)
	go t.guardStreams()
}

func (t *faultTransport) guardStreams() {
	defer t.wg.Done()
	for {
		select {
		case c := <-t.NodeAwareTransport.StreamCh():
			gc, ok := t.guard.admit(c)
			if !ok {
				continue
			}
			select {
			case t.streams <- gc:
			case <-t.stop:
				gc.Close()
				return
			}
		case <-t.stop:
			return
		}
	}
}

// Shutdown stops the network transport, then the guard: the guard takes
// what the transport accepts until it has stopped (its listener blocks on
// handing a connection over).
func (t *faultTransport) Shutdown() error {
	err := t.NodeAwareTransport.Shutdown()
	t.halt.Do(func() { close(t.stop) })
	t.wg.Wait()
	return err
}

func (t *faultTransport) fate(name, addr string) (drop bool, delay time.Duration) {
	f := t.m.cfg.faults
	if f == nil {
		return false, 0
	}
	if name == "" {
		name = t.m.nameOf(addr)
	}
	return f.packetFate(t.m.cfg.name, name)
}

func (t *faultTransport) send(b []byte, a memberlist.Address) (time.Time, error) {
	drop, delay := t.fate(a.Name, a.Addr)
	switch {
	case drop:
		return time.Now(), nil
	case delay > 0:
		b = slices.Clone(b)
		time.AfterFunc(delay, func() { _, _ = t.NodeAwareTransport.WriteToAddress(b, a) })
		return time.Now(), nil
	}
	return t.NodeAwareTransport.WriteToAddress(b, a)
}

func (t *faultTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.send(b, memberlist.Address{Addr: addr})
}

func (t *faultTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.send(b, a)
}

func (t *faultTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

func (t *faultTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	name := a.Name
	if name == "" {
		name = t.m.nameOf(a.Addr)
	}
	if t.m.cfg.faults.isCut(t.m.cfg.name, name) {
		return nil, errors.New("cut by a fault")
	}
	c, err := t.NodeAwareTransport.DialAddressTimeout(a, timeout)
	if err != nil {
		return nil, err
	}
	return t.guard.outbound(c), nil
}

// memberlistLog turns memberlist's log lines ("[WARN] memberlist: …")
// into slog records. Its warnings are the ordinary events of failure
// detection, so they are logged at Info; its errors at Warn; the rest at
// Debug. Lines above Debug are rate-limited per remote host and kind of
// line: packets that fail to decrypt, or carry a wrong label, are
// anyone's to send.
//
// Once the node leaves (quit closed), a send on the sockets its own leave
// closed is no news: "use of closed network connection" goes to Debug.
type memberlistLog struct {
	log   *slog.Logger
	limit *logging.Limiter
	quit  <-chan struct{}
}

func (w memberlistLog) Write(p []byte) (int, error) {
	s := strings.TrimSpace(string(p))
	level := slog.LevelDebug
	for prefix, l := range map[string]slog.Level{"[ERR]": slog.LevelWarn, "[WARN]": slog.LevelInfo} {
		if strings.HasPrefix(s, prefix) {
			level = l
		}
	}
	if w.leaving() && strings.Contains(s, "use of closed network connection") {
		level = slog.LevelDebug
	}
	if i := strings.Index(s, "] "); i >= 0 && strings.HasPrefix(s, "[") {
		s = s[i+2:]
	}
	if !strings.HasPrefix(s, "memberlist:") {
		s = "memberlist: " + s
	}
	// "Refuting an alive message for 'n1' (addr) meta:([1 1 2 …] VS […]),
	// vsn:(…)": the byte dumps say nothing to a reader.
	if i := strings.Index(s, " meta:(["); i >= 0 {
		s = s[:i]
	}
	if level == slog.LevelDebug || w.limit == nil {
		w.log.Log(context.Background(), level, s)
		return len(p), nil
	}
	w.limit.Log(w.log, level, "source", memberlistLogKey(s), s)
	return len(p), nil
}

// memberlistLogKey is the rate-limiting key of a memberlist line: the host
// it names (from=host:port) and what it says, up to its first detail.
func memberlistLogKey(s string) string {
	host := ""
	if i := strings.Index(s, "from="); i >= 0 {
		addr, _, _ := strings.Cut(s[i+len("from="):], " ")
		if h, _, err := net.SplitHostPort(addr); err == nil {
			host = h
		} else {
			host = addr
		}
	}
	what := strings.TrimPrefix(s, "memberlist: ")
	if i := strings.IndexAny(what, ":\"'("); i >= 0 {
		what = what[:i]
	}
	if len(what) > 48 {
		what = what[:48]
	}
	return host + " " + strings.TrimSpace(what)
}

func (w memberlistLog) leaving() bool {
	select {
	case <-w.quit:
		return true
	default:
		return false
	}
}
