package faultnet

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// Gossip wraps memberlist's transport: packets (gossip, probes) to a node
// the node is cut from are lost, the packet fault drops or delays them,
// and streams (joins, push/pull) to such a node fail to dial. The address
// memberlist advertises is registered under the node's name.
func (n Node) Gossip(t memberlist.NodeAwareTransport) memberlist.NodeAwareTransport {
	return &gossip{NodeAwareTransport: t, n: n}
}

type gossip struct {
	memberlist.NodeAwareTransport
	n Node
}

// FinalAdvertiseAddr registers the address memberlist advertises (it asks
// before it sends anything).
func (g *gossip) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	adv, p, err := g.NodeAwareTransport.FinalAdvertiseAddr(ip, port)
	if err == nil {
		g.n.f.mu.Lock()
		g.n.f.names[net.JoinHostPort(adv.String(), strconv.Itoa(p))] = g.n.name
		g.n.f.mu.Unlock()
	}
	return adv, p, err
}

func (g *gossip) peer(a memberlist.Address) string {
	if a.Name != "" {
		return a.Name
	}
	return g.n.f.nameOf(a.Addr)
}

func (g *gossip) send(b []byte, a memberlist.Address) (time.Time, error) {
	drop, delay := g.n.f.packetFate(g.n.name, g.peer(a))
	switch {
	case drop:
		return time.Now(), nil
	case delay > 0:
		b = slices.Clone(b)
		time.AfterFunc(delay, func() { _, _ = g.NodeAwareTransport.WriteToAddress(b, a) })
		return time.Now(), nil
	}
	return g.NodeAwareTransport.WriteToAddress(b, a)
}

func (g *gossip) WriteTo(b []byte, addr string) (time.Time, error) {
	return g.send(b, memberlist.Address{Addr: addr})
}

func (g *gossip) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return g.send(b, a)
}

func (g *gossip) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return g.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

func (g *gossip) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if to := g.peer(a); to != "" && g.n.f.isCut(g.n.name, to) {
		return nil, errors.New("cut by a fault")
	}
	return g.NodeAwareTransport.DialAddressTimeout(a, timeout)
}
