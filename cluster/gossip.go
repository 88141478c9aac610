package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/memberlist"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// Kind tags a gossip message with the subsystem it belongs to. Every
// subsystem shares memberlist's user messages through one delegate, which
// hands each message to the handler registered for its kind (Handle).
//
// Kinds 1 to 63 belong to the runtime's own subsystems (the constants
// below); 64 to 255 are free for embedders. 0 is the membership's own
// (a node announcing that it leaves).
type Kind byte

// The runtime's kinds. The numbers are part of the wire format; 1 and 2
// are retired (never sent).
const (
	// KindPGDiscover: a pg.scope's start notice, the only gossip of the pg
	// distribution (pgdist): it tells the scopes of other nodes that this
	// one started, so those with members send it their state. Everything
	// else of pg (changes, full syncs, anti-entropy) travels over the
	// transport, as process messages to the scope's registered name.
	KindPGDiscover Kind = 3
)

// Handler receives the gossip messages of one kind: from is the node that
// sent it (for a broadcast, the node that first sent it). It is called on
// memberlist's packet goroutine: it must not block (hand the message to a
// goroutine or loop of your own), and payload is valid only during the
// call (copy what you keep).
type Handler func(from string, payload []byte)

// MaxGossipPayload is the largest payload Broadcast and SendTo carry: a
// gossip message travels in a UDP packet. Larger exchanges belong on the
// transport (process messages).
const MaxGossipPayload = 1024

// Gossip errors.
var (
	// ErrGossipTooLarge: a payload past MaxGossipPayload.
	ErrGossipTooLarge = value.Sentinel("cluster.gossip_too_large", value.KindLimit, "gossip payload too large")
	// ErrKindTaken: a kind already has a handler.
	ErrKindTaken = value.Sentinel("cluster.gossip_kind_taken", value.KindInvalid, "gossip kind already handled")
	// ErrGossipQueueFull: MaxGossipQueue broadcasts are already waiting
	// to go out.
	ErrGossipQueueFull = value.Sentinel("cluster.gossip_queue_full", value.KindLimit, "gossip broadcast queue full")
)

// MaxGossipQueue bounds the broadcasts waiting to go out; past it
// Broadcast fails with ErrGossipQueueFull and relays are dropped. Gossip
// leaves in packets of about 1.4 KB, to GossipNodes nodes per
// GossipInterval: a subsystem that needs more belongs on the transport.
const MaxGossipQueue = 4096

// The envelope of a gossip message, version 1:
//
//	version  byte     1
//	kind     byte     Kind
//	flags    byte     1: a broadcast (relayed by every receiver, once)
//	origin   string   uvarint length and bytes: the node that sent it first
//	seq      uvarint  broadcasts only: origin's sequence number (each run
//	                  of a node starts at a random one)
//	payload  the rest
//
// A message of another version, of a kind nobody handles, or malformed is
// dropped (and counted).
const (
	gossipVersion   byte = 1
	flagBroadcast   byte = 1
	seenBroadcasts       = 1 << 14 // recent broadcasts remembered, to relay each once
	maxGossipHeader      = 3 + 1 + maxNameLen + binary.MaxVarintLen64
)

// gossip is the one memberlist delegate's message half: the handlers by
// kind, the broadcast queue, and the broadcasts already seen.
type gossip struct {
	self     string
	handlers [256]atomic.Pointer[Handler]
	queue    memberlist.TransmitLimitedQueue
	seq      atomic.Uint64
	dropped  atomic.Uint64

	mu      sync.Mutex
	seen    map[broadcastID]struct{}
	seenLog []broadcastID // ring, oldest first to forget
	seenAt  int
}

type broadcastID struct {
	origin string
	seq    uint64
}

func newGossip(self string, numNodes func() int, retransmitMult int) *gossip {
	g := &gossip{self: self, seen: make(map[broadcastID]struct{})}
	// Each run of a node numbers its broadcasts from a random point: a
	// node restarted under its name numbered from 1 again, and the others,
	// remembering the old run's first broadcasts, dropped the new run's
	// as seen (a restarted pg scope's start notice among them).
	g.seq.Store(rand.Uint64() >> 2)
	g.queue.NumNodes = numNodes
	g.queue.RetransmitMult = retransmitMult
	return g
}

// handle registers h for kind.
func (g *gossip) handle(kind Kind, h Handler) (func(), error) {
	return g.register(kind, h, false)
}

func (g *gossip) register(kind Kind, h Handler, internal bool) (func(), error) {
	if kind == kindMembership && !internal {
		return nil, errors.New("gossip kind 0 is reserved")
	}
	if !g.handlers[kind].CompareAndSwap(nil, &h) {
		return nil, fmt.Errorf("kind %d: %w", kind, ErrKindTaken)
	}
	p := g.handlers[kind].Load()
	return func() { g.handlers[kind].CompareAndSwap(p, nil) }, nil
}

// kindMembership is the membership's own kind.
const kindMembership Kind = 0

// message builds the wire form of a message.
func (g *gossip) message(kind Kind, broadcast bool, payload []byte) ([]byte, error) {
	if len(payload) > MaxGossipPayload {
		return nil, fmt.Errorf("%w: %d bytes (at most %d); send large data over the transport", ErrGossipTooLarge, len(payload), MaxGossipPayload)
	}
	b := make([]byte, 0, maxGossipHeader+len(payload))
	var flags byte
	if broadcast {
		flags |= flagBroadcast
	}
	b = append(b, gossipVersion, byte(kind), flags)
	b = binary.AppendUvarint(b, uint64(len(g.self)))
	b = append(b, g.self...)
	if broadcast {
		b = binary.AppendUvarint(b, g.seq.Add(1))
	}
	return append(b, payload...), nil
}

// broadcast queues a message for every node.
func (g *gossip) broadcast(kind Kind, payload []byte) error {
	b, err := g.message(kind, true, payload)
	if err != nil {
		return err
	}
	if g.queue.NumQueued() >= MaxGossipQueue {
		return fmt.Errorf("%w (%d broadcasts)", ErrGossipQueueFull, MaxGossipQueue)
	}
	g.queue.QueueBroadcast(gossipBroadcast(b))
	return nil
}

// receive handles one user message (memberlist's NotifyMsg).
func (g *gossip) receive(b []byte) {
	if len(b) < 4 || b[0] != gossipVersion {
		g.dropped.Add(1)
		return
	}
	kind, flags := Kind(b[1]), b[2]
	n, k := binary.Uvarint(b[3:])
	if k <= 0 || n == 0 || n > maxNameLen || n > uint64(len(b)-3-k) {
		g.dropped.Add(1)
		return
	}
	rest := b[3+k:]
	origin := string(rest[:n])
	rest = rest[n:]
	if flags&flagBroadcast != 0 {
		seq, k := binary.Uvarint(rest)
		if k <= 0 {
			g.dropped.Add(1)
			return
		}
		rest = rest[k:]
		if origin == g.self || !g.firstSight(broadcastID{origin, seq}) {
			return
		}
		// Relay it once: memberlist's queue alone did not reach every
		// node of larger clusters (NOTES.md).
		if g.queue.NumQueued() < MaxGossipQueue {
			g.queue.QueueBroadcast(gossipBroadcast(append([]byte(nil), b...)))
		} else {
			g.dropped.Add(1)
		}
	}
	h := g.handlers[kind].Load()
	if h == nil {
		g.dropped.Add(1)
		return
	}
	(*h)(origin, rest)
}

// firstSight records a broadcast and reports whether it is new.
func (g *gossip) firstSight(id broadcastID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.seen[id]; ok {
		return false
	}
	if len(g.seenLog) < seenBroadcasts {
		g.seenLog = append(g.seenLog, id)
	} else {
		delete(g.seen, g.seenLog[g.seenAt])
		g.seenLog[g.seenAt] = id
		g.seenAt = (g.seenAt + 1) % seenBroadcasts
	}
	g.seen[id] = struct{}{}
	return true
}

// gossipBroadcast is one queued broadcast; broadcasts never invalidate
// each other (each carries its own change).
type gossipBroadcast []byte

func (b gossipBroadcast) Invalidates(memberlist.Broadcast) bool { return false }
func (b gossipBroadcast) Message() []byte                       { return b }
func (b gossipBroadcast) Finished()                             {}

// errNoMember: a direct gossip message to a node that is not a live member.
func errNoMember(node string) error {
	return fmt.Errorf("node %q: %w: not a live cluster member", node, process.ErrUnreachable)
}
