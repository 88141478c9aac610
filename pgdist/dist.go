package pgdist

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
)

// Options configure a Distributor. The zero value is usable.
type Options struct {
	// Logger receives the distribution's events. Default: slog.Default().
	Logger *slog.Logger
	// Metrics registers the distribution's series (pg_cluster_*); nil:
	// none.
	Metrics *prometheus.Registry
}

// Distributor makes the pg scopes of one node part of the cluster: it
// implements pgscope.Distributor, so a pgscope.Kind (or
// pgscope.NewWithOptions) that carries it attaches every scope it starts,
// including scopes added by a reload. One serves every scope of a node.
type Distributor struct {
	node *process.Node
	c    Cluster
	log  *slog.Logger
	met  *metrics

	mu         sync.Mutex
	scopes     map[string]*replica // by entry ID: where gossip goes
	unregister func()
}

var _ pgscope.Distributor = (*Distributor)(nil)

// New makes the distributor of node over c. Close it after the scopes
// have stopped.
func New(node *process.Node, c Cluster, opts Options) (*Distributor, error) {
	if node == nil || c == nil {
		return nil, errors.New("pgdist: no node or no cluster")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	d := &Distributor{node: node, c: c, log: opts.Logger, met: newMetrics(opts.Metrics), scopes: map[string]*replica{}}
	unregister, err := c.HandleGossip(d.gossip)
	if err != nil {
		return nil, fmt.Errorf("pgdist: %w", err)
	}
	d.unregister = unregister
	return d, nil
}

// Attach implements pgscope.Distributor.
func (d *Distributor) Attach(s *pgscope.Scope) (pgscope.Peering, error) {
	if s.PID().Node != d.node.Name() {
		return nil, fmt.Errorf("pgdist: scope %s runs on node %q, not %q", s.ID(), s.PID().Node, d.node.Name())
	}
	r, err := newReplica(d, s)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Close stops taking gossip. Scopes still attached go on with what they
// have until they stop.
func (d *Distributor) Close() {
	d.mu.Lock()
	unregister := d.unregister
	d.unregister = nil
	d.mu.Unlock()
	if unregister != nil {
		unregister()
	}
}

// add makes r the replica that gossip for its scope goes to.
func (d *Distributor) add(r *replica) {
	d.mu.Lock()
	d.scopes[r.id] = r
	d.mu.Unlock()
}

// remove forgets r; it reports whether no other replica of its scope took
// its place (so the scope's series may go).
func (d *Distributor) remove(r *replica) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cur, ok := d.scopes[r.id]; ok && cur != r {
		return false
	}
	delete(d.scopes, r.id)
	return true
}

// The gossip of the distribution, version 1: a scope's start notice.
//
//	version  byte    1
//	scope    the rest: the scope's entry ID
//
// It tells every node that runs the scope that the sender's scope has just
// started (and so knows nobody's members): each that has members of its
// own sends it a full sync.

func notice(scope string) []byte {
	return append([]byte{protoVersion}, scope...)
}

// gossip handles a notice, on memberlist's goroutine.
func (d *Distributor) gossip(from string, payload []byte) {
	if len(payload) < 2 || payload[0] != protoVersion || from == d.node.Name() {
		return
	}
	d.mu.Lock()
	r := d.scopes[string(payload[1:])]
	d.mu.Unlock()
	if r != nil {
		r.q.push(item{kind: itemNotice, node: from})
	}
}
