package faultnet

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
)

// Listen listens as net.Listen does, and registers the address under the
// node's name (other nodes' dials find it there). What it accepts is under
// Drop, and a connection from a node cut from this one fails its first
// read (its handshake), as a dial that was never answered.
func (n Node) Listen(network, addr string) (net.Listener, error) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	n.f.register(ln.Addr(), n.name)
	return &listener{Listener: ln, n: n}, nil
}

// Dial dials as a net.Dialer does, unless the node is cut from the one
// listening at addr, or drops what it sends there. The connection is
// under Drop; its local address is registered, so the accepting side
// knows who dialed.
func (n Node) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	to := n.f.nameOf(addr)
	if to != "" && n.f.isCut(n.name, to) {
		return nil, errors.New("cut by a fault")
	}
	if to != "" && n.f.dropping(n.name, to) {
		return nil, errors.New("dropped by a fault")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	n.f.register(c.LocalAddr(), n.name)
	fc := &conn{Conn: c, n: n}
	fc.checked.Store(true)
	if to != "" {
		fc.to.Store(&to)
	}
	return fc, nil
}

type listener struct {
	net.Listener
	n Node
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, n: l.n}, nil
}

// conn is a transport connection of node n under Drop: what n writes to
// the node at the other end is lost while n drops what it sends there.
type conn struct {
	net.Conn
	n       Node
	to      atomic.Pointer[string] // the node at the other end, once known
	checked atomic.Bool            // the first read's cut check is done (accepted side only)
}

// peer returns the node at the other end: for an accepted connection it
// is learnt from the dialer's registered address, which the dialer
// registers before it writes a byte.
func (c *conn) peer() string {
	if to := c.to.Load(); to != nil {
		return *to
	}
	to := c.n.f.nameOf(c.RemoteAddr().String())
	if to != "" {
		c.to.Store(&to)
	}
	return to
}

func (c *conn) Write(p []byte) (int, error) {
	if to := c.peer(); to != "" && c.n.f.dropping(c.n.name, to) {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *conn) Read(p []byte) (int, error) {
	if !c.checked.Swap(true) {
		if from := c.peer(); from != "" && c.n.f.isCut(from, c.n.name) {
			return 0, errors.New("cut by a fault")
		}
	}
	return c.Conn.Read(p)
}
