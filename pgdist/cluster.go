package pgdist

import (
	"github.com/proctor-run/proctor/cluster"
)

// Cluster is what the distribution needs of the cluster layer: the live
// members and their changes, one kind of gossip, and a place to show the
// circuit breakers. FromCluster adapts a *cluster.Cluster; tests use
// fakes.
type Cluster interface {
	// Members returns the live members other than this node, by name. It
	// never waits.
	Members() []string
	// Subscribe calls fn with every membership change from now on, in
	// order, and returns the live members at that point. fn must not
	// block. cancel stops the calls.
	Subscribe(fn func(MemberEvent)) (live []string, cancel func())
	// HandleGossip registers h for the distribution's gossip (a scope's
	// start notice); h must not block and must copy what it keeps.
	HandleGossip(h func(from string, payload []byte)) (unregister func(), err error)
	// Gossip sends payload (at most 1,024 bytes) to every node, best
	// effort.
	Gossip(payload []byte) error
	// AddBreakers shows src's breaker states under name until remove is
	// called.
	AddBreakers(name string, src BreakerSource) (remove func())
}

// MemberEvent is a change of the membership: Node became a live member
// (Up), or stopped being one because it left or failed.
type MemberEvent struct {
	Node string
	Up   bool
}

// BreakerSource reports circuit breaker states by node: "closed", "open"
// or "half_open". A replica is one.
type BreakerSource interface {
	BreakerStates() map[string]string
}

// FromCluster adapts a running cluster node. A scope's start notice
// travels as gossip of kind cluster.KindPGDiscover; everything else goes
// over the transport, as process messages.
func FromCluster(c *cluster.Cluster) Cluster { return clusterAdapter{c} }

type clusterAdapter struct{ c *cluster.Cluster }

func names(ms []cluster.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

func (a clusterAdapter) Members() []string { return names(a.c.Membership().Members()) }

func (a clusterAdapter) Subscribe(fn func(MemberEvent)) ([]string, func()) {
	live, cancel := a.c.Membership().Subscribe(func(e cluster.Event) {
		switch e.Kind {
		case cluster.MemberJoined:
			fn(MemberEvent{Node: e.Member.Name, Up: true})
		case cluster.MemberLeft:
			fn(MemberEvent{Node: e.Member.Name})
		}
		// MemberUpdated: a new transport address. The old connection's
		// end fires the monitors of the node's scopes, and that resyncs.
	})
	return names(live), cancel
}

func (a clusterAdapter) HandleGossip(h func(string, []byte)) (func(), error) {
	return a.c.Membership().Handle(cluster.KindPGDiscover, h)
}

func (a clusterAdapter) Gossip(p []byte) error {
	return a.c.Membership().Broadcast(cluster.KindPGDiscover, p)
}

func (a clusterAdapter) AddBreakers(name string, src BreakerSource) func() {
	return a.c.AddBreakers(name, src)
}
