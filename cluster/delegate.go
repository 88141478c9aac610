package cluster

import (
	"fmt"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/proctor-run/proctor/value"
)

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
var ErrNameTaken = value.Sentinel("cluster.name_taken", value.KindInvalid, "node name taken by another live member")

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
