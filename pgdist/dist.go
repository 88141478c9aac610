package pgdist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

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

// remove forgets r; it reports whether r was its scope's replica (and no
// other took its place since), so that the scope's series may go.
func (d *Distributor) remove(r *replica) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.scopes[r.id] != r {
		return false
	}
	delete(d.scopes, r.id)
	return true
}

// The gossip of the distribution, version 1: a scope's start notice.
//
//	version  byte     1
//	scope    string   the scope's entry ID
//	asked    uvarint  a count, then as many node names: the nodes the
//	                  scope sent discover to (they answer that instead)
//	pid      uvarint  the scope's process: its ID, then its creation
//	         uvarint  (the node is the sender's); absent in the notices
//	                  of older nodes, which stop reading after asked
//
// Strings are a uvarint length and bytes. The notice tells every node that
// runs the scope that the sender's scope has just started (and so knows
// nobody's members): each that has members of its own and was not asked
// sends it a full sync. A node that does not know the sender's scope
// process yet takes it from the notice (the gossip is the sender node's
// own, as a hello's answer is), so what that process sends next is applied
// without a hello to verify it first.

// maxNotice is the largest notice: a gossip payload.
const maxNotice = 1024

func notice(scope string, asked []string, pid process.PID) []byte {
	b := appendString([]byte{protoVersion}, scope)
	withAsked := binary.AppendUvarint(b, uint64(len(asked)))
	for _, n := range asked {
		withAsked = appendString(withAsked, n)
	}
	if len(withAsked)+2*binary.MaxVarintLen64 > maxNotice {
		// Too many long names: everyone sends, the asked twice.
		withAsked = binary.AppendUvarint(b, 0)
	}
	return binary.AppendUvarint(binary.AppendUvarint(withAsked, pid.ID), uint64(pid.Creation))
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// gossip handles a notice, on memberlist's goroutine.
func (d *Distributor) gossip(from string, payload []byte) {
	self := d.node.Name()
	if from == self {
		return
	}
	scope, asked, pid, err := parseNotice(payload, self)
	if err != nil || asked {
		return
	}
	if !pid.IsZero() {
		pid.Node = from
	}
	d.mu.Lock()
	rep := d.scopes[scope]
	d.mu.Unlock()
	if rep != nil {
		rep.submit(func(now time.Time) { rep.notice(from, pid, now) })
	}
}

// parseNotice reads a start notice: the scope's entry ID, whether self is
// among the nodes the scope asked directly, and the scope's process
// without its node (zero from an older node).
func parseNotice(payload []byte, self string) (scope string, asked bool, pid process.PID, err error) {
	if len(payload) < 2 || payload[0] != protoVersion {
		return "", false, pid, errVersion
	}
	r := &reader{s: string(payload[1:])}
	if scope, err = r.str(); err != nil {
		return "", false, pid, err
	}
	n, err := r.count()
	if err != nil {
		return "", false, pid, err
	}
	for range n {
		node, err := r.str()
		if err != nil {
			return "", false, pid, err
		}
		asked = asked || node == self
	}
	if len(r.s) == 0 {
		return scope, asked, pid, nil // an older node's
	}
	id, err := r.uvarint()
	if err != nil {
		return "", false, pid, err
	}
	creation, err := r.uvarint()
	if err != nil || creation > 1<<32-1 {
		return "", false, pid, errMalformed
	}
	return scope, asked, process.PID{ID: id, Creation: uint32(creation)}, nil
}
