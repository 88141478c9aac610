package pgdist

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/remote"
)

// memCluster is a membership a test controls, over nodes that talk through
// remote.MemNetwork: which node sees which as live is the test's say, and
// gossip reaches every node that the sender sees.
type memCluster struct {
	mu    sync.Mutex
	nodes map[string]*memMember
	// gossip counts the gossip messages delivered and their bytes.
	gossipMsgs, gossipBytes atomic.Int64
}

type memMember struct {
	c        *memCluster
	name     string
	live     map[string]bool
	subs     map[int]func(MemberEvent)
	next     int
	handler  func(string, []byte)
	breakers map[string]BreakerSource
}

func newMemCluster() *memCluster { return &memCluster{nodes: map[string]*memMember{}} }

func (c *memCluster) member(name string) *memMember {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.nodes[name]
	if m == nil {
		m = &memMember{c: c, name: name, live: map[string]bool{}, subs: map[int]func(MemberEvent){}, breakers: map[string]BreakerSource{}}
		c.nodes[name] = m
	}
	return m
}

// see makes observer see node as live (up) or gone, with the event.
func (c *memCluster) see(observer, node string, up bool) {
	m := c.member(observer)
	c.mu.Lock()
	if m.live[node] == up {
		c.mu.Unlock()
		return
	}
	m.live[node] = up
	if !up {
		delete(m.live, node)
	}
	subs := make([]func(MemberEvent), 0, len(m.subs))
	for _, fn := range m.subs {
		subs = append(subs, fn)
	}
	c.mu.Unlock()
	for _, fn := range subs {
		fn(MemberEvent{Node: node, Up: up})
	}
}

// connect makes every pair of names see each other.
func (c *memCluster) connect(names ...string) {
	for _, a := range names {
		for _, b := range names {
			if a != b {
				c.see(a, b, true)
			}
		}
	}
}

func (m *memMember) Members() []string {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	out := make([]string, 0, len(m.live))
	for n := range m.live {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (m *memMember) Subscribe(fn func(MemberEvent)) ([]string, func()) {
	live := m.Members()
	m.c.mu.Lock()
	m.next++
	id := m.next
	m.subs[id] = fn
	m.c.mu.Unlock()
	return live, func() {
		m.c.mu.Lock()
		delete(m.subs, id)
		m.c.mu.Unlock()
	}
}

func (m *memMember) HandleGossip(h func(string, []byte)) (func(), error) {
	m.c.mu.Lock()
	m.handler = h
	m.c.mu.Unlock()
	return func() {
		m.c.mu.Lock()
		m.handler = nil
		m.c.mu.Unlock()
	}, nil
}

func (m *memMember) Gossip(p []byte) error {
	var hs []func(string, []byte)
	m.c.mu.Lock()
	for n := range m.live {
		if o := m.c.nodes[n]; o != nil && o.handler != nil {
			hs = append(hs, o.handler)
		}
	}
	m.c.mu.Unlock()
	m.c.gossipMsgs.Add(int64(len(hs)))
	m.c.gossipBytes.Add(int64(len(hs) * len(p)))
	for _, h := range hs {
		h(m.name, slices.Clone(p))
	}
	return nil
}

func (m *memMember) AddBreakers(name string, src BreakerSource) func() {
	m.c.mu.Lock()
	m.breakers[name] = src
	m.c.mu.Unlock()
	return func() {
		m.c.mu.Lock()
		delete(m.breakers, name)
		m.c.mu.Unlock()
	}
}

func (m *memMember) breakerStates(name string) map[string]string {
	m.c.mu.Lock()
	src := m.breakers[name]
	m.c.mu.Unlock()
	if src == nil {
		return nil
	}
	return src.BreakerStates()
}

// memPG is a cluster of nodes on a MemNetwork with a memCluster
// membership, each with a distributed scope of scopeID.
type memPG struct {
	t      testing.TB
	net    *remote.MemNetwork
	c      *memCluster
	spec   pgscope.Spec
	logs   *testutil.SyncBuffer
	quiet  bool // discard the logs (a benchmark of many nodes)
	closed bool
	nodes  map[string]*memNode
}

type memNode struct {
	node   *process.Node
	tr     *remote.Transport
	m      *memMember
	d      *Distributor
	env    *registry.Env
	reg    *prometheus.Registry
	health *checks
	s      *pgscope.Scope
}

// newMemPG starts the named nodes, each seeing every other.
func newMemPG(t testing.TB, mod func(*pgscope.Spec), names ...string) *memPG {
	t.Helper()
	spec := pgscope.DefaultSpec()
	if mod != nil {
		mod(&spec)
	}
	mp := &memPG{t: t, net: remote.NewMemNetwork(remote.MemOptions{}), c: newMemCluster(), spec: spec,
		logs: &testutil.SyncBuffer{}, nodes: map[string]*memNode{}}
	t.Cleanup(mp.close)
	mp.c.connect(names...)
	for _, n := range names {
		mp.add(n, true)
	}
	return mp
}

func (mp *memPG) log() *slog.Logger {
	if mp.quiet {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(mp.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// add starts node name; with scope, its scope too.
func (mp *memPG) add(name string, scope bool) *memNode {
	mp.t.Helper()
	n := &memNode{reg: prometheus.NewRegistry(), health: &checks{m: map[string]func() error{}}, m: mp.c.member(name)}
	n.node = process.NewNode(process.Options{Name: name, Logger: mp.log()})
	var err error
	if n.tr, err = remote.New(n.node, mp.net.Endpoint(name), remote.Options{Logger: mp.log()}); err != nil {
		mp.t.Fatal(err)
	}
	if n.d, err = New(n.node, n.m, Options{Logger: mp.log().With("node", name), Metrics: n.reg}); err != nil {
		mp.t.Fatal(err)
	}
	n.env = &registry.Env{Node: n.node, Logger: mp.log().With("node", name), Metrics: n.reg, Health: n.health}
	mp.nodes[name] = n
	if scope {
		mp.startScope(name)
	}
	return n
}

func (mp *memPG) startScope(name string) *pgscope.Scope {
	mp.t.Helper()
	n := mp.nodes[name]
	s, err := pgscope.NewWithOptions(n.env, scopeID, mp.spec, pgscope.Options{Distributor: n.d})
	if err != nil {
		mp.t.Fatal(err)
	}
	n.s = s
	return s
}

func (mp *memPG) close() {
	if mp.closed {
		return
	}
	mp.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range mp.nodes {
		if n.s != nil {
			_ = n.s.Stop(ctx)
		}
		n.d.Close()
	}
	for _, n := range mp.nodes {
		_ = n.tr.Close()
	}
	mp.net.Close()
	if mp.t.Failed() {
		mp.t.Logf("logs:\n%s", tail(mp.logs.String(), 200))
	}
}

// spawn starts a member process on node name.
func (mp *memPG) spawn(name string) process.PID {
	mp.t.Helper()
	pid, err := mp.nodes[name].node.Spawn(echo{}, process.SpawnOptions{})
	if err != nil {
		mp.t.Fatal(err)
	}
	node := mp.nodes[name].node
	mp.t.Cleanup(func() { _ = node.Kill(pid) })
	return pid
}

func (mp *memPG) waitMembers(group string, want []process.PID, nodes ...string) {
	mp.t.Helper()
	w := sorted(want)
	testutil.EventuallyWithin(mp.t, 20*time.Second, group+" to converge", func() bool {
		for _, n := range nodes {
			if !slices.Equal(sorted(mp.nodes[n].s.GetMembers(group)), w) {
				return false
			}
		}
		return true
	})
}

// view returns node's view of peer, as of now: the replica's loop has
// published what it handled (the view lags it by publishEvery at most).
func (mp *memPG) view(node, peer string) PeerView {
	if r := mp.nodes[node].d.replicaOf(scopeID); r != nil {
		r.settle()
	}
	for _, v := range mp.nodes[node].s.View().(pgscope.ScopeView).Peers.([]PeerView) {
		if v.Node == peer {
			return v
		}
	}
	return PeerView{}
}

// counter reads a series of a node's registry.
var counter = testutil.MetricValue
