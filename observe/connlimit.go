package observe

import (
	"net"
	"net/http"
)

// ConnLimit bounds the connections a listener serves at once, as the
// endpoint's own listener does (see ListenOptions.MaxConns), for other
// HTTP servers of the node (http.server entries). At the limit it closes
// the keep-alive connection idle the longest; when none is idle it hands
// the new connection to Refuse, or, without Refuse, waits for a slot.
type ConnLimit struct{ l *limitListener }

// NewConnLimit wraps ln. refuse, when not nil, is called on a goroutine of
// its own with each connection turned away; it must close it.
func NewConnLimit(ln net.Listener, max int, refuse func(net.Conn)) *ConnLimit {
	if max <= 0 {
		max = DefaultMaxConns
	}
	l := newLimitListener(ln, max)
	l.refuse = refuse
	return &ConnLimit{l: l}
}

// Listener is the bounded listener to serve.
func (c *ConnLimit) Listener() net.Listener { return c.l }

// ConnState must be the http.Server's ConnState hook (of every server that
// serves connections of this listener): it tells idle connections apart.
// A connection that wraps the one accepted (a *tls.Conn, and what a
// server wraps that in or under) is tracked by the one accepted, found
// through their NetConn methods.
func (c *ConnLimit) ConnState(nc net.Conn, state http.ConnState) {
	for {
		if _, ok := nc.(*limitConn); ok {
			break
		}
		t, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		nc = t.NetConn()
	}
	c.l.track(nc, state)
}

// Open returns the number of connections being served.
func (c *ConnLimit) Open() int { return int(c.l.open.Load()) }

// SetMax changes the limit in place (max <= 0: DefaultMaxConns). The
// connections being served stay served; while more are open than a
// lowered limit allows, a new connection takes the place of an idle
// keep-alive one, or is turned away (or waits) as at the limit.
func (c *ConnLimit) SetMax(max int) {
	if max <= 0 {
		max = DefaultMaxConns
	}
	c.l.setMax(max)
}
