package cluster

import (
	"time"

	"github.com/hashicorp/memberlist"
)

// MemberState is what the membership knows of a node.
type MemberState string

// The states of a member.
const (
	// StateAlive: the node answers probes.
	StateAlive MemberState = "alive"
	// StateSuspect: a probe failed; the node is still a member until the
	// suspicion times out or it refutes.
	StateSuspect MemberState = "suspect"
	// StateDead: failure detection declared it gone (a crash, or a
	// partition).
	StateDead MemberState = "dead"
	// StateLeft: it left gracefully.
	StateLeft MemberState = "left"
)

func stateOf(s memberlist.NodeStateType) MemberState {
	switch s {
	case memberlist.StateSuspect:
		return StateSuspect
	case memberlist.StateDead:
		return StateDead
	case memberlist.StateLeft:
		return StateLeft
	}
	return StateAlive
}

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
