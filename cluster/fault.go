package cluster

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote"
)

// Faults injects network failures between the nodes of one test program,
// at the sending side: what a node sends to a node it is cut from is lost,
// in both layers (membership's gossip and probes, and the transport). One
// Faults is shared by every node of a test (Options.Faults); nil, the
// default, injects nothing.
//
// A cut is one direction: Cut("a", "b") loses what a sends to b, while b
// still reaches a (memberlist's indirect probes then keep a from
// suspecting b, as they would on a real network). Partition cuts both
// directions between two groups.
type Faults struct {
	mu     sync.Mutex
	cut    map[[2]string]bool
	drop   map[[2]string]bool
	frame  remote.Fault
	packet PacketFault
}

// PacketFault decides the fate of one membership packet (gossip, probe)
// from one node to another: dropped, or sent after delay.
type PacketFault func(from, to string) (drop bool, delay time.Duration)

// NewFaults returns a Faults that injects nothing yet.
func NewFaults() *Faults { return &Faults{cut: map[[2]string]bool{}, drop: map[[2]string]bool{}} }

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

func (f *Faults) dropping(from, to string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drop[[2]string{from, to}]
}

// wrap returns c with Drop applied to what from writes on it; to may be
// set later (an accepted connection learns it in the handshake). Without
// faults c is returned as is.
func (f *Faults) wrap(c net.Conn, from, to string) (net.Conn, *atomic.Pointer[string]) {
	if f == nil {
		return c, nil
	}
	fc := &faultConn{Conn: c, f: f, from: from}
	if to != "" {
		fc.to.Store(&to)
	}
	return fc, &fc.to
}

// faultConn is a transport connection under Drop.
type faultConn struct {
	net.Conn
	f    *Faults
	from string
	to   atomic.Pointer[string]
}

func (c *faultConn) Write(p []byte) (int, error) {
	if to := c.to.Load(); to != nil && c.f.dropping(c.from, *to) {
		return len(p), nil
	}
	return c.Conn.Write(p)
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

// HealAll undoes every cut.
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
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cut[[2]string{from, to}]
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
	if f == nil {
		return false, 0
	}
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
