package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/internal/backoff"
	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote"
)

// TCPOptions configure a TCPNetwork. Name and Listen are required; the
// zero value of every other field is a usable default.
type TCPOptions struct {
	// Name is this node's name.
	Name string
	// Listen is the host:port the transport listens on; port 0 picks a
	// free one (Addr tells which).
	Listen string
	// Advertise is the host:port other nodes dial, when it is not the
	// listener's own address (a listener on 0.0.0.0). Default: Addr.
	Advertise string
	// Key is the handshake key (Keys.Handshake). Default: the key derived
	// from no secret, which authenticates nothing.
	Key []byte
	// TLS, when set, runs every connection over TLS 1.3 (TLSOptions): an
	// ephemeral certificate, or mutual TLS with a CA. Nil: plain TCP,
	// which only a cluster without a secret runs.
	TLS *TLSOptions
	// Logger receives connection events and refused input. Default:
	// slog.Default().
	Logger *slog.Logger
	// QueueSize bounds the frames waiting to be written to one peer; a
	// Send past it fails with remote.ErrQueueFull. Default: 65536.
	QueueSize int
	// MaxFrame is the largest frame accepted from a peer (and sent to
	// one); a larger frame closes the connection. Default: DefaultMaxFrame.
	MaxFrame int
	// DialTimeout bounds a connection attempt, HandshakeTimeout the
	// handshake after it, TLS included (on both sides: an accepted
	// connection that has not completed the handshake by then is closed).
	// Defaults: 2s and 2s.
	DialTimeout, HandshakeTimeout time.Duration
	// MaxHandshakes bounds the accepted connections still in their
	// handshake; a connection accepted past it is closed at once (counted
	// as shed), so a flood of idle connects holds at most this many file
	// descriptors and goroutines until HandshakeTimeout. Default: 64.
	MaxHandshakes int
	// MaxHandshakesPerHost bounds them per remote host (IP), and one
	// more for each member whose transport is there. Default: 8.
	MaxHandshakesPerHost int
	// StrangerHandshakes bounds those from hosts that are no member's (no
	// peer the membership reported up has a transport address there), so
	// strangers, however many addresses they have, leave the members
	// MaxHandshakes - StrangerHandshakes. Default: MaxHandshakes / 2.
	StrangerHandshakes int
	// WriteTimeout bounds one batch of writes to a peer that does not
	// read; past it the connection is closed. Default: 10s.
	WriteTimeout time.Duration
	// TickInterval is the link heartbeat, as Erlang's net_ticktime: a
	// connection that has carried nothing inbound for this long is closed
	// (its node reported down: links and monitors fire noconnection) and
	// dialed again; each side writes a tick frame when it has written
	// nothing for a quarter of it. Default: 3s.
	TickInterval time.Duration
	// ReconnectMin and ReconnectMax bound the backoff between attempts to
	// reach a peer (doubling from min to max). Defaults: 50ms and 1s.
	ReconnectMin, ReconnectMax time.Duration
	// ConnectWait is how long a peer that the membership reports alive may
	// stay unconnected before sends to it fail at once rather than queue.
	// Default: 5s.
	ConnectWait time.Duration
	// LogWindow is how long the transport's rate-limited warnings (refused
	// connections, failed accepts) are counted before one line says how
	// many were suppressed. Default: 10s.
	LogWindow time.Duration
	// ListenFunc and DialContext, when set, replace net.Listen and a
	// net.Dialer for the transport's connections (Interpose). DialContext
	// gets a context that ends after DialTimeout.
	ListenFunc  func(network, addr string) (net.Listener, error)
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (o *TCPOptions) defaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1 << 16
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = DefaultMaxFrame
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 2 * time.Second
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 2 * time.Second
	}
	if o.MaxHandshakes <= 0 {
		o.MaxHandshakes = 64
	}
	if o.MaxHandshakesPerHost <= 0 {
		o.MaxHandshakesPerHost = 8
	}
	if o.StrangerHandshakes <= 0 {
		o.StrangerHandshakes = max(1, o.MaxHandshakes/2)
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.TickInterval <= 0 {
		o.TickInterval = 3 * time.Second
	}
	if o.ReconnectMin <= 0 {
		o.ReconnectMin = 50 * time.Millisecond
	}
	if o.ReconnectMax < o.ReconnectMin {
		o.ReconnectMax = max(time.Second, o.ReconnectMin)
	}
	if o.ConnectWait <= 0 {
		o.ConnectWait = 5 * time.Second
	}
	if o.Key == nil {
		o.Key = noSecretKey
	}
	if o.ListenFunc == nil {
		o.ListenFunc = net.Listen
	}
	if o.DialContext == nil {
		d := &net.Dialer{}
		o.DialContext = d.DialContext
	}
}

// noSecretKey is the handshake key of a node without a secret.
var noSecretKey = func() []byte {
	k, err := DeriveKeys(make([]byte, MinSecret))
	if err != nil {
		panic(err)
	}
	return k.Handshake
}()

// TCPNetwork is the cluster's remote.Network: one persistent TCP
// connection per peer, made by the node whose name sorts first (so two
// nodes never race to connect to each other) and authenticated by the
// handshake. Each peer has a bounded queue of frames and a goroutine that
// writes them in batches; a reader goroutine per connection hands each
// frame to the Receiver.
//
// The membership tells it which peers exist (PeerUp, with the address
// their metadata advertises) and which are gone (PeerDown). A send to a
// peer that is not up, or that cannot be reached, fails at once. A
// connection that breaks, or a peer that goes down, is reported to the
// Receiver as NodeDown once its reader has stopped: frames in flight may
// have been lost, so links and monitors fire with noconnection.
type TCPNetwork struct {
	opts TCPOptions
	log  *slog.Logger
	ln   net.Listener
	addr string

	ctx    context.Context
	cancel context.CancelFunc
	recv   remote.Receiver
	wg     sync.WaitGroup

	// limit rate-limits the log lines anyone who reaches the port can
	// cause (refused connections), per remote host.
	limit logging.Limiter

	peers    atomic.Pointer[map[string]*peer] // read by Send; copied on change under mu
	draining atomic.Bool                      // the node is leaving: no more dials

	handshakes *slots        // a slot per accepted connection in its handshake
	secret     bool          // a handshake authenticates: the key is a secret's, or the CA checks certificates
	tls        *transportTLS // nil: plain TCP
	acc        acceptCounters

	mu   sync.Mutex
	down map[string]bool // peers the membership reports gone: their dials are refused
	// memberUp is closed (and replaced) when a peer comes up: inbound
	// connections waiting for the membership look again.
	memberUp chan struct{}
	stats    map[string]*PeerCounters
	started  bool
	closed   bool
}

var (
	_ remote.Network      = (*TCPNetwork)(nil)
	_ remote.FrameLimiter = (*TCPNetwork)(nil)
)

// ListenTCP binds the transport's listener. Start (called by remote.New)
// begins accepting.
func ListenTCP(opts TCPOptions) (*TCPNetwork, error) {
	opts.defaults()
	if err := checkNodeName(opts.Name); err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	ln, err := opts.ListenFunc("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	n := &TCPNetwork{
		opts: opts, log: opts.Logger.With("node", opts.Name), ln: ln, addr: ln.Addr().String(),
		down: map[string]bool{}, stats: map[string]*PeerCounters{},
		handshakes: newSlots(opts.MaxHandshakes, opts.MaxHandshakesPerHost, opts.StrangerHandshakes), memberUp: make(chan struct{}),
		secret: !bytes.Equal(opts.Key, noSecretKey) || opts.TLS.mutual(),
	}
	n.limit.Window = opts.LogWindow
	if opts.TLS != nil {
		if n.tls, err = newTransportTLS(opts.TLS, n.log); err != nil {
			ln.Close()
			return nil, err
		}
	}
	if opts.Advertise != "" {
		n.addr = opts.Advertise
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.peers.Store(&map[string]*peer{})
	return n, nil
}

// Addr returns the address other nodes dial (advertised in the node's
// metadata).
func (n *TCPNetwork) Addr() string { return n.addr }

// SetAdvertise sets the address Addr returns; call it before the
// membership starts advertising it.
func (n *TCPNetwork) SetAdvertise(addr string) { n.addr = addr }

// Start implements remote.Network: it begins accepting connections.
func (n *TCPNetwork) Start(r remote.Receiver) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.started {
		return errors.New("transport: already started or closed")
	}
	n.started = true
	n.recv = r
	n.wg.Add(1)
	go n.accept()
	return nil
}

// Close implements remote.Network: every connection closes and every
// goroutine ends before it returns.
func (n *TCPNetwork) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	n.cancel()
	err := n.ln.Close()
	n.wg.Wait()
	return err
}

// Send implements remote.Network.
func (n *TCPNetwork) Send(node string, frame []byte) error {
	p := (*n.peers.Load())[node]
	// A node the membership has not reported yet may already have
	// connected (it dialed, proved the secret, and sent): what goes back
	// to it, such as the reply to its ask, takes that connection.
	if p == nil || (!p.up.Load() && !p.connected.Load()) {
		return fmt.Errorf("node %q: %w: not a live cluster member", node, process.ErrUnreachable)
	}
	if p.failing.Load() {
		return fmt.Errorf("node %q: %w (%w): %s", node, process.ErrNoConnection, process.ErrUnreachable, p.lastErr())
	}
	// The frame is within MaxFrame: the transport encoded it with that
	// budget (remote.FrameLimiter), and a peer closes a connection that
	// passes it anyway.
	return p.push(outFrame{b: frame})
}

// MaxFrame implements remote.FrameLimiter: the transport encodes each
// envelope with this budget, so one too large fails before it is built.
func (n *TCPNetwork) MaxFrame() int { return n.opts.MaxFrame }

// Drain stops dialing peers: the node is leaving the cluster, and the
// peers close their connections as they see it go. Sends still work over
// the connections that remain.
func (n *TCPNetwork) Drain() { n.draining.Store(true) }

// PeerUp tells the network that node is a live member whose transport
// listens on addr: sends to it are accepted from now on, and the node
// that dials (the one whose name sorts first) connects.
func (n *TCPNetwork) PeerUp(node, addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || !n.started || node == n.opts.Name {
		// Before Start there is no Receiver to report to: the
		// membership starts after the transport.
		return
	}
	// The node's previous entry may still be stopping: its NodeDown (which
	// fails the asks awaiting the node) must come before anything is sent
	// to the node anew. The previous entry is the one before the current
	// (made when the node connected before the membership reported it),
	// or the last one.
	var prev <-chan struct{}
	if p := (*n.peers.Load())[node]; p != nil {
		prev = p.prev
	} else if st := n.stats[node]; st != nil {
		prev = st.lastDone
	}
	if prev != nil {
		n.mu.Unlock()
		select {
		case <-prev:
		case <-n.ctx.Done():
		}
		n.mu.Lock()
		if n.closed {
			return
		}
	}
	delete(n.down, node)
	p := n.peerLocked(node)
	p.addr.Store(&addr)
	p.up.Store(true)
	p.poke()
	close(n.memberUp)
	n.memberUp = make(chan struct{})
}

// PeerDown tells the network that node is gone: sends to it fail from now
// on, its queue is dropped, its connection closed, and the Receiver told
// NodeDown once the connection's reader has stopped. Its connections are
// refused until PeerUp.
func (n *TCPNetwork) PeerDown(node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || node == n.opts.Name {
		return
	}
	n.down[node] = true
	peers := *n.peers.Load()
	p := peers[node]
	if p == nil {
		return
	}
	p.up.Store(false)
	p.stop()
	next := make(map[string]*peer, len(peers))
	for k, v := range peers {
		if k != node {
			next[k] = v
		}
	}
	n.peers.Store(&next)
}

// Forget drops the counters of a node that is gone for good (the
// membership forgot it); a node that is up or connected keeps them.
func (n *TCPNetwork) Forget(node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := (*n.peers.Load())[node]; !ok {
		delete(n.stats, node)
		delete(n.down, node)
	}
}

// ForgetCounters drops the counters of a node that left for good, once
// its last peer entry has stopped (a new entry waits for that one), unless
// it has come back meanwhile. Its dials stay refused until PeerUp.
func (n *TCPNetwork) ForgetCounters(node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.stats[node]
	if st == nil || n.closed {
		return
	}
	done := st.lastDone
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if done != nil {
			select {
			case <-done:
			case <-n.ctx.Done():
				return
			}
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		if _, ok := (*n.peers.Load())[node]; !ok && n.stats[node] == st {
			delete(n.stats, node)
		}
	}()
}

// peerLocked returns the peer entry of node, making it (not up) when there
// is none. n.mu is held.
func (n *TCPNetwork) peerLocked(node string) *peer {
	peers := *n.peers.Load()
	if p := peers[node]; p != nil {
		return p
	}
	st := n.stats[node]
	if st == nil {
		st = &PeerCounters{}
		n.stats[node] = st
	}
	p := newPeer(n, node, st)
	next := make(map[string]*peer, len(peers)+1)
	for k, v := range peers {
		next[k] = v
	}
	next[node] = p
	n.peers.Store(&next)
	n.wg.Add(1)
	go p.run()
	return p
}

// AcceptStatus is how the transport's listener fares: an accept that
// fails (too many open files, say) is retried with backoff, and a
// connection past MaxHandshakes is shed.
type AcceptStatus struct {
	// Errors counts failed accepts; LastError is the latest.
	Errors    uint64 `json:"errors"`
	LastError string `json:"last_error,omitempty"`
	// Shed counts connections closed at once: MaxHandshakes were in
	// their handshake.
	Shed uint64 `json:"shed"`
	// Handshaking is the connections in their handshake now.
	Handshaking int `json:"handshaking"`
}

// acceptCounters are the listener's counters; lastErr is guarded by the
// network's mu.
type acceptCounters struct {
	errors, shed atomic.Uint64
	lastErr      string
}

// AcceptStatus returns the listener's counters.
func (n *TCPNetwork) AcceptStatus() AcceptStatus {
	n.mu.Lock()
	last := n.acc.lastErr
	n.mu.Unlock()
	return AcceptStatus{
		Errors: n.acc.errors.Load(), LastError: last, Shed: n.acc.shed.Load(),
		Handshaking: n.handshakes.inUse(),
	}
}

// Backoff of a failing accept, as net/http's Server does it.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// accept takes connections until the network closes. A failed accept (out
// of file descriptors, say) is retried after a backoff that doubles from
// 5ms to 1s, so the node accepts again once the condition passes.
func (n *TCPNetwork) accept() {
	defer n.wg.Done()
	retries := backoff.New(backoff.Policy{Initial: acceptBackoffMin, Max: acceptBackoffMax})
	for {
		c, err := n.ln.Accept()
		if err != nil {
			if n.ctx.Err() != nil {
				return
			}
			if errors.Is(err, net.ErrClosed) {
				n.log.Error("transport: the listener closed; no more connections are accepted", "error", err)
				return
			}
			delay := retries.Next()
			n.acc.errors.Add(1)
			n.mu.Lock()
			n.acc.lastErr = err.Error()
			n.mu.Unlock()
			n.limit.Log(n.log, slog.LevelError, "accept", "", "transport: accept failed; retrying", "retry_in", delay.String(), "error", err)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-n.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		retries.Reset()
		host := remoteHost(c)
		release, why := n.handshakes.take(host, n.membersAt(host))
		if release == nil {
			n.acc.shed.Add(1)
			n.limit.Log(n.log, slog.LevelWarn, "remote_host", host, "transport: "+why+" in their handshake; connection closed",
				"remote", c.RemoteAddr().String(), "max_handshakes", n.opts.MaxHandshakes,
				"per_host", n.opts.MaxHandshakesPerHost, "strangers", n.opts.StrangerHandshakes)
			c.Close()
			continue
		}
		n.wg.Add(1)
		go n.inbound(c, release)
	}
}

// membersAt counts the peers the membership reported up whose transport
// is on host: connections from it take the members' share of the
// handshake slots, one more per member.
func (n *TCPNetwork) membersAt(host string) int {
	count := 0
	for _, p := range *n.peers.Load() {
		if !p.up.Load() {
			continue
		}
		if h, _, err := net.SplitHostPort(p.addrString()); err == nil && h == host {
			count++
		}
	}
	return count
}

// inbound runs the accepting side of the handshake and hands the
// connection to its peer; release gives its handshake slot back.
func (n *TCPNetwork) inbound(c net.Conn, release func()) {
	defer n.wg.Done()
	// The stop closes the accepted connection itself: c is wrapped below,
	// and the closure must not read the variable while it is reassigned.
	raw := c
	stop := context.AfterFunc(n.ctx, func() { raw.Close() })
	deadline := time.Now().Add(n.opts.HandshakeTimeout)
	_ = c.SetDeadline(deadline)
	sc, ekm, err := n.secure(n.ctx, c, true)
	var name string
	if err == nil {
		name, err = acceptHandshake(sc, n.opts.Key, n.opts.Name, ekm)
	}
	if err == nil && !dials(name, n.opts.Name) {
		err = fmt.Errorf("%w: node %q dialed, but %q dials it", ErrHandshake, name, n.opts.Name)
	}
	var p *peer
	if err == nil {
		p, err = n.inboundPeer(name, deadline)
	}
	release()
	if err != nil {
		stop()
		c.Close()
		n.limit.Log(n.log, slog.LevelWarn, "remote_host", remoteHost(c), "transport: connection refused", "remote", c.RemoteAddr().String(), "error", err)
		return
	}
	_ = c.SetDeadline(time.Time{})
	stop()
	p.handOver(sc)
}

// inboundPeer returns the peer an authenticated connection from name
// belongs to. A member's is its peer. With a secret, a node that proved
// it holds the secret but that the membership has not reported yet gets a
// peer for as long as its connection lasts (so its asks are answered).
// Without a secret the handshake proves nothing, so the connection waits,
// until deadline at most, for the membership to report the node: only
// members make peers.
func (n *TCPNetwork) inboundPeer(name string, deadline time.Time) (*peer, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			return nil, errors.New("the network is closing")
		}
		// A node the membership reported gone waits for it to join again:
		// one restarted on its address dials as soon as it has joined,
		// often before this node's membership has seen it, and refusing it
		// cost a round of backoff (and the pg breakers' patience).
		down := n.down[name]
		if p := (*n.peers.Load())[name]; !down && ((p != nil && p.up.Load()) || n.secret) {
			p := n.peerLocked(name)
			n.mu.Unlock()
			return p, nil
		}
		up := n.memberUp
		n.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		select {
		case <-up:
		case <-timer.C:
			if down {
				return nil, fmt.Errorf("node %q: the membership reports it gone", name)
			}
			return nil, fmt.Errorf("node %q is not a member (no secret authenticates it)", name)
		case <-n.ctx.Done():
			return nil, n.ctx.Err()
		}
	}
}

// dropStranger removes p, a peer made for a connection from a node the
// membership had not reported, once that connection has ended: it stops
// and its entry and counters go, so connections under made-up names leave
// nothing behind. False when the membership has reported the node since.
func (n *TCPNetwork) dropStranger(p *peer) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p.up.Load() {
		return false
	}
	peers := *n.peers.Load()
	if peers[p.name] == p {
		next := make(map[string]*peer, len(peers))
		for k, v := range peers {
			if k != p.name {
				next[k] = v
			}
		}
		n.peers.Store(&next)
		if n.stats[p.name] == p.st {
			delete(n.stats, p.name)
		}
	}
	p.cancel()
	return true
}

// remoteHost is the host of c's remote address: the key its log lines are
// rate-limited by (a flood of connections comes from many ports).
func remoteHost(c net.Conn) string {
	a := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// dials reports whether the node named a dials the node named b: the one
// whose name sorts first.
func dials(a, b string) bool { return a < b }

// PeerCounters are one peer's transport counters. They outlive the peer's
// connections and its going down and coming back.
type PeerCounters struct {
	BytesOut, BytesIn, FramesOut, FramesIn atomic.Uint64
	// Connects counts connections made; Reconnects those after the first.
	Connects, Reconnects atomic.Uint64
	// Dropped counts frames that were queued but never written: the
	// peer went down or its connection broke first.
	Dropped atomic.Uint64

	// lastDone is closed when the node's latest peer entry has stopped;
	// a new entry waits for it, so that the old connection's NodeDown
	// comes before the new connection's first frame. Guarded by the
	// network's mu.
	lastDone <-chan struct{}
}

// PeerStatus is one peer as the transport sees it.
type PeerStatus struct {
	Node      string `json:"node"`
	Address   string `json:"address"`
	Up        bool   `json:"up"`
	Connected bool   `json:"connected"`
	// QueueDepth is the frames waiting to be written.
	QueueDepth int    `json:"queue_depth"`
	LastError  string `json:"last_error,omitempty"`

	BytesOut   uint64 `json:"bytes_out"`
	BytesIn    uint64 `json:"bytes_in"`
	FramesOut  uint64 `json:"frames_out"`
	FramesIn   uint64 `json:"frames_in"`
	Reconnects uint64 `json:"reconnects"`
	Dropped    uint64 `json:"dropped"`
}

// Peers returns every peer the transport has known, by name.
func (n *TCPNetwork) Peers() []PeerStatus {
	peers := *n.peers.Load()
	n.mu.Lock()
	out := make([]PeerStatus, 0, len(n.stats))
	for name, st := range n.stats {
		ps := PeerStatus{
			Node: name, BytesOut: st.BytesOut.Load(), BytesIn: st.BytesIn.Load(),
			FramesOut: st.FramesOut.Load(), FramesIn: st.FramesIn.Load(),
			Reconnects: st.Reconnects.Load(), Dropped: st.Dropped.Load(),
		}
		if p := peers[name]; p != nil {
			if a := p.addr.Load(); a != nil {
				ps.Address = *a
			}
			ps.Up, ps.Connected, ps.QueueDepth = p.up.Load(), p.connected.Load(), p.queueLen()
			if p.failing.Load() {
				ps.LastError = p.lastErr()
			}
		}
		out = append(out, ps)
	}
	n.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}
