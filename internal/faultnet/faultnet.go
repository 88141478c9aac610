// Package faultnet injects network failures between the cluster nodes of
// one test program. It wraps what a node reaches the network through (the
// transport's listener and dialer, the remote.Network its frames go
// through, memberlist's transport: cluster.Interpose) so that production
// code carries no fault hook: a node started without these wrappers has
// none.
//
// Failures are injected at the sending side: what a node sends to a node
// it is cut from is lost, in both layers (membership's gossip and probes,
// and the transport). One Faults is shared by every node of a test; each
// node interposes the wrappers of its own name (Faults.Node).
//
// A cut is one direction: Cut("a", "b") loses what a sends to b, while b
// still reaches a (memberlist's indirect probes then keep a from
// suspecting b, as they would on a real network). Partition cuts both
// directions between two groups.
//
// Nodes are told apart by address: a node's listeners register the
// addresses they listen on under its name, and a connection it dials
// registers its local address, so the accepting side knows who dialed.
package faultnet

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote"
)

// PacketFault decides the fate of one membership packet (gossip, probe)
// from one node to another: dropped, or sent after delay.
type PacketFault func(from, to string) (drop bool, delay time.Duration)

// Faults is the failure state of one test's network; the zero value is
// not usable: make one with New.
type Faults struct {
	mu     sync.Mutex
	cut    map[[2]string]bool
	drop   map[[2]string]bool
	frame  remote.Fault
	packet PacketFault
	names  map[string]string // host:port -> node name (listeners, dialed connections' local ends)
}

// New returns a Faults that injects nothing yet.
func New() *Faults {
	return &Faults{cut: map[[2]string]bool{}, drop: map[[2]string]bool{}, names: map[string]string{}}
}

// Drop makes the transport's connections from from to to drop what from
// writes, silently, while they stay open, until Undrop: a black hole in one
// direction, as a firewall dropping packets makes one. New connections
// from from to to fail to dial. The membership is not touched (its
// indirect probes keep the nodes alive, as on a real network).
func (f *Faults) Drop(from, to string) {
	f.mu.Lock()
	f.drop[[2]string{from, to}] = true
	f.mu.Unlock()
}

// Undrop undoes Drop.
func (f *Faults) Undrop(from, to string) {
	f.mu.Lock()
	delete(f.drop, [2]string{from, to})
	f.mu.Unlock()
}

// Cut loses everything from sends to until Heal: transport sends fail at
// once with process.ErrUnreachable, dials fail, membership packets and
// streams are dropped. Connections already made stay open: failure
// detection (the membership's) is what closes them.
func (f *Faults) Cut(from, to string) {
	f.mu.Lock()
	f.cut[[2]string{from, to}] = true
	f.mu.Unlock()
}

// Heal undoes Cut.
func (f *Faults) Heal(from, to string) {
	f.mu.Lock()
	delete(f.cut, [2]string{from, to})
	f.mu.Unlock()
}

// Partition cuts every direction between a node of a and a node of b.
func (f *Faults) Partition(a, b []string) {
	for _, x := range a {
		for _, y := range b {
			f.Cut(x, y)
			f.Cut(y, x)
		}
	}
}

// HealAll undoes every cut and drop.
func (f *Faults) HealAll() {
	f.mu.Lock()
	clear(f.cut)
	clear(f.drop)
	f.mu.Unlock()
}

// SetFrameFault installs fn (nil removes it) for transport frames sent from
// now on: a frame is dropped, or delayed (holding up the frames behind it,
// as a slow connection would).
func (f *Faults) SetFrameFault(fn remote.Fault) {
	f.mu.Lock()
	f.frame = fn
	f.mu.Unlock()
}

// SetPacketFault installs fn (nil removes it) for membership packets.
func (f *Faults) SetPacketFault(fn PacketFault) {
	f.mu.Lock()
	f.packet = fn
	f.mu.Unlock()
}

func (f *Faults) isCut(from, to string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cut[[2]string{from, to}]
}

func (f *Faults) dropping(from, to string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drop[[2]string{from, to}]
}

// register records that addr is node name's.
func (f *Faults) register(addr net.Addr, name string) {
	if addr == nil {
		return
	}
	f.mu.Lock()
	f.names[addr.String()] = name
	f.mu.Unlock()
}

// nameOf returns the node whose address addr is, "" if none registered it.
func (f *Faults) nameOf(addr string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.names[addr]
}

// frameFate applies the cut and the frame fault to a transport frame.
func (f *Faults) frameFate(from, to string, frame []byte) (drop bool, delay time.Duration, err error) {
	f.mu.Lock()
	cut, fn := f.cut[[2]string{from, to}], f.frame
	f.mu.Unlock()
	if cut {
		return true, 0, fmt.Errorf("node %s: %w: cut by a fault", to, process.ErrUnreachable)
	}
	if fn == nil {
		return false, 0, nil
	}
	drop, delay = fn(from, to, frame)
	return drop, delay, nil
}

// packetFate applies the cut and the packet fault to a membership packet.
func (f *Faults) packetFate(from, to string) (drop bool, delay time.Duration) {
	f.mu.Lock()
	cut, fn := f.cut[[2]string{from, to}], f.packet
	f.mu.Unlock()
	if cut {
		return true, 0
	}
	if fn == nil || to == "" {
		return false, 0
	}
	return fn(from, to)
}

// Node is the node named name's side of the faults: its wrappers, which
// cluster.Interpose takes.
type Node struct {
	f    *Faults
	name string
}

// Node returns the wrappers of the node named name.
func (f *Faults) Node(name string) Node { return Node{f: f, name: name} }
