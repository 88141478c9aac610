package cluster

import "time"

// MemberState is what the membership knows of a node.
type MemberState string

// The states of a member.
const (
	// StateAlive: the node is a member (it answers probes, or is suspect
	// and has not yet been declared dead: memberlist does not tell its
	// users which).
	StateAlive MemberState = "alive"
	// StateDead: failure detection declared it gone (a crash, or a
	// partition).
	StateDead MemberState = "dead"
	// StateLeft: it left gracefully.
	StateLeft MemberState = "left"
)

// Member is one node of the cluster.
type Member struct {
	// Name is the node's name: the node of its PIDs.
	Name string `json:"name"`
	// State is its state as of the snapshot or event.
	State MemberState `json:"state"`
	// Gossip is its memberlist address (host:port).
	Gossip string `json:"gossip"`
	// Transport is the address of its transport, from its metadata.
	Transport string `json:"transport"`
	// Meta is its decoded metadata.
	Meta Meta `json:"-"`
	// Since is when this node saw it enter State.
	Since time.Time `json:"since"`
}

// EventKind tells what happened to a member.
type EventKind uint8

// The membership events.
const (
	// MemberJoined: a node became a live member (for the first time, or
	// again after it was dead or had left).
	MemberJoined EventKind = iota + 1
	// MemberLeft: a node stopped being a live member: Member.State tells
	// whether it left (StateLeft) or failed (StateDead). The transport
	// has reported it down (process.Inbound.NodeDown) before the event.
	MemberLeft
	// MemberUpdated: a live member's metadata changed.
	MemberUpdated
)

func (k EventKind) String() string {
	switch k {
	case MemberJoined:
		return "joined"
	case MemberLeft:
		return "left"
	case MemberUpdated:
		return "updated"
	}
	return "unknown"
}

// Event is one change of the membership, as subscribers see it.
type Event struct {
	Kind   EventKind
	Member Member
}
