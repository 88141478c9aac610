package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote"
	"github.com/proctor-run/proctor/value"
)

// Options configure a cluster node. Node and Bind are required; the zero
// value of every other field is a usable default.
type Options struct {
	// Node is the local runtime; its name is the node's name in the
	// cluster and must be unique there.
	Node *process.Node
	// Bind is memberlist's host:port (UDP and TCP); port 0 picks a free
	// one.
	Bind string
	// TransportBind is the transport's host:port. Default: Bind's host,
	// a free port (advertised in the node's metadata, so peers find it).
	TransportBind string
	// Advertise is the IP other nodes reach this one at, when Bind's host
	// is not it (0.0.0.0). Default: Bind's host, or for 0.0.0.0 a private
	// address of the machine, as memberlist picks it.
	Advertise string
	// Join lists the seeds: host:port of memberlist addresses, or host
	// names that resolve (each address a seed). Empty: this node starts
	// a cluster of its own and others join it.
	Join []string
	// Secret is the cluster's shared secret (at least MinSecret bytes):
	// it encrypts gossip, and the transport runs over TLS 1.3 whose
	// ends prove they hold it. Without Secret and TLS nothing is
	// encrypted or authenticated, and Start refuses to bind a
	// non-loopback address unless Insecure is set.
	Secret []byte
	// TLS gives the transport mutual TLS with a CA (TLSOptions' files),
	// instead of or as well as the secret's proof. It does not cover
	// gossip: without Secret the membership is neither encrypted nor
	// authenticated (a warning says so on a non-loopback address).
	TLS *TLSOptions
	// Insecure lets a node without Secret or TLS bind a non-loopback
	// address (with a logged warning).
	Insecure bool
	// Logger receives the cluster's events. Default: slog.Default().
	Logger *slog.Logger
	// Timing tunes failure detection and rejoining.
	Timing Timing
	// QueueSize and MaxFrame are the transport's (TCPOptions).
	QueueSize, MaxFrame int
	// Remote configures the remote transport over the network (asks'
	// default reply timeout, the bound on pending asks).
	Remote remote.Options
	// Streams bound what memberlist's TCP port lets others cost
	// (StreamLimits; zero: the defaults).
	Streams StreamLimits
	// Resolver resolves seed host names. Default: net.DefaultResolver.
	Resolver Resolver
	// LogWindow is how long the cluster's rate-limited log lines (refused
	// connections, gossip that fails to decrypt) are counted before one
	// line says how many were suppressed. Default: 10s.
	LogWindow time.Duration
	// Interpose wraps what the node reaches the network through (tests
	// inject failures with it). Default: nil, nothing is wrapped.
	Interpose Interposer
}

// Cluster is one node's membership in a cluster and its transport: the
// membership (memberlist) tells the transport which peers are alive and
// where their transport listens, and the transport carries the process
// core's signals to them (remote.Transport over TCPNetwork), so PIDs of
// other nodes work as local ones do.
type Cluster struct {
	opts Options
	log  *slog.Logger
	node *process.Node
	net  *TCPNetwork
	tr   *remote.Transport
	ms   *Membership

	bmu      sync.Mutex
	breakers atomic.Pointer[[]breakerSource]

	closeOnce sync.Once
	closeErr  error
}

// Start joins node to the cluster: it binds the transport and memberlist,
// installs the transport on the node, and joins the seeds in the
// background (retrying with backoff until one answers).
func Start(opts Options) (*Cluster, error) {
	if opts.Node == nil {
		return nil, errors.New("cluster: no node")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver.LookupHost
	}
	opts.Timing.defaults()
	name := opts.Node.Name()
	if err := checkNodeName(name); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	host, _, err := net.SplitHostPort(opts.Bind)
	if err != nil {
		return nil, fmt.Errorf("cluster bind %q: %w", opts.Bind, err)
	}
	if opts.TransportBind == "" {
		opts.TransportBind = net.JoinHostPort(host, "0")
	}
	log := opts.Logger.With("node", name)
	var keys Keys
	tlsOpts := opts.TLS
	if opts.Secret != nil {
		if keys, err = DeriveKeys(opts.Secret); err != nil {
			return nil, err
		}
		if tlsOpts == nil {
			tlsOpts = &TLSOptions{} // an ephemeral certificate; the proof authenticates
		}
	}
	if exposed := exposedAddr(opts.Bind, opts.TransportBind); exposed != "" {
		switch {
		case opts.Secret == nil && opts.TLS == nil && !opts.Insecure:
			return nil, fmt.Errorf("cluster: %w: %s is not a loopback address; give the cluster a secret (--cluster-secret-file) or TLS certificates (--cluster-tls-cert, --cluster-tls-key, --cluster-tls-ca), or say --cluster-insecure", ErrInsecure, exposed)
		case opts.Secret == nil && opts.TLS == nil:
			log.Warn("cluster: no secret and no TLS, and a non-loopback address is bound (--cluster-insecure): anyone who reaches it can join the cluster, read its traffic and send to its processes", "address", exposed)
		case opts.Secret == nil:
			log.Warn("cluster: TLS protects the transport, but without a secret the membership's gossip is neither encrypted nor authenticated: anyone who reaches the gossip port can join the membership or forge its news; add --cluster-secret-file", "address", exposed)
		}
	}
	c := &Cluster{opts: opts, log: log, node: opts.Node}
	tcpOpts := TCPOptions{
		Name: name, Listen: opts.TransportBind, Key: keys.Handshake, TLS: tlsOpts, Logger: opts.Logger,
		QueueSize: opts.QueueSize, MaxFrame: opts.MaxFrame, LogWindow: opts.LogWindow,
	}
	var gossipWrap func(memberlist.NodeAwareTransport) memberlist.NodeAwareTransport
	if ip := opts.Interpose; ip != nil {
		tcpOpts.ListenFunc, tcpOpts.DialContext, gossipWrap = ip.Listen, ip.Dial, ip.Gossip
	}
	c.breakers.Store(&[]breakerSource{})
	c.net, err = ListenTCP(tcpOpts)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	ropts := opts.Remote
	if ropts.Logger == nil {
		ropts.Logger = opts.Logger
	}
	var nw remote.Network = c.net
	if opts.Interpose != nil {
		nw = opts.Interpose.Network(nw)
	}
	c.tr, err = remote.New(opts.Node, nw, ropts)
	if err != nil {
		_ = c.net.Close()
		return nil, err
	}
	c.ms, err = startMembership(membershipConfig{
		name: name, creation: opts.Node.Creation(), bind: opts.Bind, advHost: opts.Advertise, seeds: opts.Join, key: keys.Gossip,
		transport: c.transportAddr, timing: opts.Timing, resolve: opts.Resolver, gossip: gossipWrap, logWindow: opts.LogWindow, streams: opts.Streams, log: log,
		peerUp: func(m Member) { c.net.PeerUp(m.Name, m.Transport) },
		peerDown: func(m Member) {
			c.net.PeerDown(m.Name)
			if m.State == StateLeft {
				// Gone for good: its counters (and their metric series)
				// go once its peer has stopped, so names that come and
				// go (pods) do not pile up.
				c.net.ForgetCounters(m.Name)
			}
		},
		forget: c.net.Forget,
	})
	if err != nil {
		_ = c.tr.Close()
		return nil, err
	}
	log.Info("cluster: started", "gossip", c.ms.Addr(), "transport", c.net.Addr(), "seeds", opts.Join, "secret", opts.Secret != nil, "tls", tlsMode(tlsOpts))
	return c, nil
}

// transportAddr returns the transport address to advertise once the
// membership knows its own advertised IP: the listener's, unless it
// listens on every interface.
func (c *Cluster) transportAddr(adv net.IP) string {
	addr := c.net.ln.Addr().(*net.TCPAddr)
	if addr.IP.IsUnspecified() && adv != nil {
		c.net.SetAdvertise(net.JoinHostPort(adv.String(), strconv.Itoa(addr.Port)))
	}
	return c.net.Addr()
}

// ErrInsecure: a node without a secret or TLS would bind an address other
// hosts reach.
var ErrInsecure = value.Sentinel("cluster.insecure", value.KindInvalid, "refusing to run an unauthenticated, unencrypted cluster on a network")

// exposedAddr returns the first of addrs that is not a loopback address,
// "" when all are.
func exposedAddr(addrs ...string) string {
	for _, a := range addrs {
		if !loopback(a) {
			return a
		}
	}
	return ""
}

// loopback reports whether addr's host is a loopback address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tlsMode names how the transport is secured (Status.TLS).
func tlsMode(o *TLSOptions) string {
	switch {
	case o == nil:
		return "off"
	case o.mutual():
		return "mutual"
	}
	return "ephemeral"
}

// Name returns this node's name.
func (c *Cluster) Name() string { return c.node.Name() }

// Node returns the local runtime.
func (c *Cluster) Node() *process.Node { return c.node }

// Membership returns the cluster's membership: live members, events,
// gossip.
func (c *Cluster) Membership() *Membership { return c.ms }

// Transport returns the remote transport installed on the node.
func (c *Cluster) Transport() *remote.Transport { return c.tr }

// Network returns the TCP network under the transport.
func (c *Cluster) Network() *TCPNetwork { return c.net }

// Err returns why this node is not a healthy member of its cluster, nil
// when it is: ErrNameTaken (wrapped) when another live member that started
// first holds its name and this was seen after Start returned (Start
// fails with it when its first join shows it).
func (c *Cluster) Err() error { return c.ms.Err() }

// Close leaves the cluster gracefully (the others see this node leave, not
// fail), then stops the transport: every link and monitor with a process
// of another node fires with process.ErrNoConnection, and the asks still
// waiting for other nodes fail with it.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.net.Drain()
		err := c.ms.leave()
		if e := c.tr.Close(); err == nil {
			err = e
		}
		c.closeErr = err
		c.log.Info("cluster: left")
	})
	return c.closeErr
}

// BreakerSource reports circuit breaker states per node: node name to
// "closed", "open" or "half_open". A subsystem with a breaker per peer
// (pg.scope) implements it; it needs no import of this package.
type BreakerSource interface {
	BreakerStates() map[string]string
}

type breakerSource struct {
	name string
	src  BreakerSource
	id   *int
}

// AddBreakers makes src's breaker states part of Status and the metrics,
// under name (a scope's entry ID, say). The returned function removes it.
func (c *Cluster) AddBreakers(name string, src BreakerSource) (remove func()) {
	id := new(int)
	c.bmu.Lock()
	next := append(append([]breakerSource(nil), *c.breakers.Load()...), breakerSource{name, src, id})
	c.breakers.Store(&next)
	c.bmu.Unlock()
	return func() {
		c.bmu.Lock()
		defer c.bmu.Unlock()
		cur := *c.breakers.Load()
		next := make([]breakerSource, 0, len(cur))
		for _, b := range cur {
			if b.id != id {
				next = append(next, b)
			}
		}
		c.breakers.Store(&next)
	}
}

// Status is the cluster as this node sees it (GET /v1/cluster).
type Status struct {
	Node      string `json:"node"`
	Gossip    string `json:"gossip"`
	Transport string `json:"transport"`
	// Secret tells whether the cluster runs with a shared secret.
	Secret bool `json:"secret"`
	// TLS is how the transport is secured: "off", "ephemeral" (the
	// secret's proof authenticates) or "mutual" (certificates from a CA).
	TLS     string         `json:"tls"`
	Members []MemberStatus `json:"members"`
	// Remote is the remote transport's counters.
	Remote remote.Stats `json:"remote"`
	// GossipDropped counts gossip messages dropped on arrival.
	GossipDropped uint64 `json:"gossip_dropped"`
	// Conflict is why this node is not a member, when it is not (Err).
	Conflict string `json:"conflict,omitempty"`
	// Accept is how the transport's listener fares: failed accepts
	// (retried with backoff) and connections shed past MaxHandshakes.
	Accept AcceptStatus `json:"accept"`
}

// MemberStatus is one other node: its membership, its transport peer and
// the breakers that guard it.
type MemberStatus struct {
	Member
	// Peer is the transport's view: connection, queue depth, counters.
	Peer *PeerStatus `json:"peer,omitempty"`
	// Breakers maps a breaker source (AddBreakers) to its state for this
	// node.
	Breakers map[string]string `json:"breakers,omitempty"`
}

// Status returns the members (every node seen, live or not) with their
// transport and breaker states.
func (c *Cluster) Status() Status {
	s := Status{
		Node: c.Name(), Gossip: c.ms.Addr(), Transport: c.net.Addr(), Secret: c.opts.Secret != nil, TLS: tlsMode(c.net.opts.TLS),
		Remote: c.tr.Stats(), GossipDropped: c.ms.GossipDropped(), Accept: c.net.AcceptStatus(),
	}
	if err := c.Err(); err != nil {
		s.Conflict = err.Error()
	}
	peers := map[string]PeerStatus{}
	for _, p := range c.net.Peers() {
		peers[p.Node] = p
	}
	breakers := map[string]map[string]string{}
	for _, b := range *c.breakers.Load() {
		for node, state := range b.src.BreakerStates() {
			if breakers[node] == nil {
				breakers[node] = map[string]string{}
			}
			breakers[node][b.name] = state
		}
	}
	for _, m := range c.ms.Known() {
		ms := MemberStatus{Member: m, Breakers: breakers[m.Name]}
		if p, ok := peers[m.Name]; ok {
			ms.Peer = &p
		}
		s.Members = append(s.Members, ms)
	}
	sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].Name < s.Members[j].Name })
	return s
}

// WaitMembers waits until n other nodes are live members, or ctx ends.
func (c *Cluster) WaitMembers(ctx context.Context, n int) error {
	done := make(chan struct{})
	var once sync.Once
	members, cancel := c.ms.Subscribe(func(Event) {
		if len(*c.ms.live.Load()) >= n {
			once.Do(func() { close(done) })
		}
	})
	defer cancel()
	if len(members) >= n {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cluster: %d of %d other nodes joined: %w", len(c.ms.Members()), n, ctx.Err())
	}
}
