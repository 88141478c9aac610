package cluster

import (
	"fmt"
	"net"
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

// NotifyMerge sees another node's whole state as this node joins it
// (the answer to a push/pull, sent before it merged this node's): offer
// learns from it whether that node holds this one at its address.
func (d *delegate) NotifyMerge(peers []*memberlist.Node) error {
	held := false
	for _, n := range peers {
		if n.Name == d.m.cfg.name {
			held = n.Address() == d.m.addr && n.State == memberlist.StateAlive
		}
	}
	d.m.heldBy.Store(held)
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
	taken := fmt.Errorf("cluster: %w: %q is the name of the member at %s since %s; start this node under another name",
		ErrNameTaken, n.Name, n.Address(), theirs.Started.UTC().Format(time.RFC3339))
	// Whether it holds the name or is this node's run before a restart
	// on another address (killed, not yet declared dead), only a ping
	// tells: settleHolder sends it, off memberlist's goroutine.
	m.claims.Add(1)
	m.holder.Store(&holder{addr: n.Address(), taken: taken})
	return taken
}

// holder is a member seen under this node's name that started first.
type holder struct {
	addr  string // its gossip address
	taken error  // ErrNameTaken, naming it: the error if it answers
}

// holderPings is how many pings (each waits ProbeTimeout) a holder of this
// node's name may leave unanswered before it is taken for this node's run
// before a restart.
const holderPings = 3

// settleHolder decides a claim on this node's name by a member that
// started first. One that answers a ping holds the name: this node is not
// a member (Err returns ErrNameTaken). One that does not is taken for this
// node before a restart on another address (a process killed, a pod
// rescheduled): the others ignore this node until they declare the old
// one dead, and rejoin keeps offering this node's state to them until one
// takes it. Called by Start and then by rejoin only.
func (m *Membership) settleHolder(h *holder) {
	if m.Err() != nil {
		return
	}
	if h.addr == m.silent && time.Since(m.silentChecked) < m.cfg.timing.RejoinMax {
		m.displaced = true
		return
	}
	if udp, err := net.ResolveUDPAddr("udp", h.addr); err == nil {
		for range holderPings {
			if _, err := m.ml.Ping(m.cfg.name, udp); err == nil {
				taken := h.taken
				if m.conflict.CompareAndSwap(nil, &taken) {
					m.log.Error("cluster: this node's name is taken; it is not a member of the cluster", "error", taken)
				}
				return
			}
		}
	}
	if h.addr != m.silent {
		m.log.Info("cluster: the member holding this node's name does not answer: taken for this node before a restart; joining once the others declare it dead",
			"holder", h.addr)
	}
	if !m.displaced {
		m.displacedSince, m.displacedWarned = time.Now(), false
	}
	m.silent, m.silentChecked, m.displaced = h.addr, time.Now(), true
}
