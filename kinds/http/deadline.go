package http

import (
	"errors"
	"net"
	"sync"
	"time"
)

// deadlineConn gives a connection the deadlines net/http sets
// on it when they can matter: at the next read or write, or at once when
// one is in progress. net/http moves a connection's read deadline six
// times per request when the server has read, write and idle
// timeouts (the header's, the whole request's, none while its background
// read waits, a long-ago one to stop that read, none again, the idle
// one), and most of those are replaced before any read: each was a
// runtime timer armed or stopped for nothing. A deadline only governs
// the reads (writes) made while it is in force, and one set while none
// is in progress is the same absolute time when the next one begins, so
// what every read and write is held to is unchanged; a read waiting
// (net/http's background read, which notices a client leaving) gets a
// new deadline at once, as before. (Setting one while idle reports no
// error, even on a closed connection; net/http ignores those errors, and
// the next read or write reports the closed connection itself.)
type deadlineConn struct {
	net.Conn
	mu     sync.Mutex
	rd, wd deadline
}

type deadline struct {
	at      time.Time
	pending bool // at is not yet the connection's
	busy    int  // reads (writes) in progress
}

// NetConn returns the connection wrapped.
func (c *deadlineConn) NetConn() net.Conn { return c.Conn }

func (c *deadlineConn) Read(b []byte) (int, error) {
	c.begin(&c.rd, c.Conn.SetReadDeadline)
	n, err := c.Conn.Read(b)
	c.end(&c.rd)
	return n, err
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	c.begin(&c.wd, c.Conn.SetWriteDeadline)
	n, err := c.Conn.Write(b)
	c.end(&c.wd)
	return n, err
}

// begin gives the connection d's pending deadline. An error setting it
// (a closed connection) is the operation's own to report.
func (c *deadlineConn) begin(d *deadline, set func(time.Time) error) {
	c.mu.Lock()
	d.busy++
	if d.pending {
		d.pending = false
		_ = set(d.at)
	}
	c.mu.Unlock()
}

func (c *deadlineConn) end(d *deadline) {
	c.mu.Lock()
	d.busy--
	c.mu.Unlock()
}

func (c *deadlineConn) set(d *deadline, t time.Time, set func(time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.busy > 0 {
		d.pending = false
		return set(t)
	}
	d.at, d.pending = t, true
	return nil
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	return c.set(&c.rd, t, c.Conn.SetReadDeadline)
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	return c.set(&c.wd, t, c.Conn.SetWriteDeadline)
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

// deadlineListener gives each connection it accepts a deadlineConn: the
// one a TLS server's tls.Conn runs over, whose deadlines tls.Conn sets
// (a plain server's errorConn is one itself).
type deadlineListener struct{ net.Listener }

func (l deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &deadlineConn{Conn: c}, nil
}
