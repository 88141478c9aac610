package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/internal/logging"
)

// StreamLimits bound what memberlist's TCP port (joins and push/pull state
// syncs) lets anyone who reaches it cost. memberlist reads a stream's
// announced size (up to 20 MiB) before it can decrypt, and takes every
// connection; so a stranger with no key could hold gigabytes. The zero
// value of each field takes its default.
type StreamLimits struct {
	// Max bounds the inbound streams being handled at once. Default: 64.
	Max int
	// PerHost bounds them per remote host (IP), and one more for each
	// known node there. Default: 8.
	PerHost int
	// Strangers bounds those from hosts that are no known member's, so
	// the members always have Max - Strangers. Default: 16.
	Strangers int
	// MaxBytes bounds what one stream (inbound, or the answer to one this
	// node opened) may carry. Default: 256 KiB and 1 KiB per node known,
	// far above what memberlist's push/pull of this cluster holds (about
	// 200 bytes a node, no user state).
	MaxBytes int64
}

func (l *StreamLimits) defaults() {
	if l.Max <= 0 {
		l.Max = 64
	}
	if l.PerHost <= 0 {
		l.PerHost = 8
	}
	if l.Strangers <= 0 {
		l.Strangers = 16
	}
	l.Strangers = min(l.Strangers, l.Max)
}

// errStreamTooLarge: a stream carried more than StreamLimits.MaxBytes.
var errStreamTooLarge = errors.New("memberlist stream larger than this cluster's limit")

// slots bounds connections being served at once from anyone who reaches a
// port: in all, per remote host, and from hosts that are no known member's
// (strangers), so that strangers — however many addresses they have —
// leave the members a share of their own.
type slots struct {
	max, perHost, strangers int

	mu       sync.Mutex
	total    int
	stranger int
	byHost   map[string]int
}

func newSlots(max, perHost, strangers int) *slots {
	return &slots{max: max, perHost: perHost, strangers: min(strangers, max), byHost: map[string]int{}}
}

// take takes a slot for a connection from host, where members known
// nodes run (none: a stranger), or says why there is none; release gives
// it back (once). A host gets perHost slots and one more for each of its
// members: the nodes of one machine (a test's, a small deployment's) all
// dial a node that restarts at once.
func (s *slots) take(host string, members int) (release func(), why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stranger := members == 0
	switch {
	case s.total >= s.max:
		return nil, "too many connections at once"
	case stranger && s.stranger >= s.strangers:
		return nil, "too many connections from hosts that are no member's"
	case s.byHost[host] >= s.perHost+members:
		return nil, "too many connections from one host"
	}
	s.total++
	s.byHost[host]++
	if stranger {
		s.stranger++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			if s.byHost[host]--; s.byHost[host] <= 0 {
				delete(s.byHost, host)
			}
			if stranger {
				s.stranger--
			}
		})
	}, ""
}

// inUse returns the slots taken.
func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// streamGuard admits memberlist's inbound streams within the limits, and
// bounds each one's size and lifetime.
type streamGuard struct {
	lim     StreamLimits
	timeout time.Duration         // a stream's whole life (Timing.TCPTimeout)
	known   func(host string) int // known nodes on host
	nodes   func() int            // nodes known, for the default MaxBytes
	log     *slog.Logger
	limit   logging.Limiter
	slots   *slots
	shed    atomic.Uint64
}

func newStreamGuard(lim StreamLimits, timeout time.Duration, known func(string) int, nodes func() int, log *slog.Logger) *streamGuard {
	lim.defaults()
	return &streamGuard{lim: lim, timeout: timeout, known: known, nodes: nodes, log: log, slots: newSlots(lim.Max, lim.PerHost, lim.Strangers)}
}

func (g *streamGuard) maxBytes() int64 {
	if g.lim.MaxBytes > 0 {
		return g.lim.MaxBytes
	}
	return 256<<10 + 1<<10*int64(g.nodes())
}

// admit returns c guarded, or closes it and returns false when a limit is
// reached.
func (g *streamGuard) admit(c net.Conn) (net.Conn, bool) {
	host := remoteHost(c)
	release, why := g.slots.take(host, g.known(host))
	if release == nil {
		g.shed.Add(1)
		g.limit.Log(g.log, slog.LevelWarn, "remote_host", host, "memberlist: "+why+"; stream closed",
			"remote", c.RemoteAddr().String(), "max", g.lim.Max, "per_host", g.lim.PerHost, "strangers", g.lim.Strangers)
		c.Close()
		return nil, false
	}
	gc := &guardedConn{Conn: c, left: g.maxBytes(), deadline: time.Now().Add(g.timeout), release: release}
	_ = c.SetDeadline(gc.deadline)
	return gc, true
}

// outbound bounds the size of a stream this node opened (a seed or member
// answering a push/pull could announce 20 MiB too).
func (g *streamGuard) outbound(c net.Conn) net.Conn {
	return &guardedConn{Conn: c, left: g.maxBytes(), release: func() {}}
}

// guardedConn is a memberlist stream within its limits: it reads at most
// left bytes, and (inbound) no deadline set on it reaches past deadline.
type guardedConn struct {
	net.Conn
	left     int64     // owned by the one reader (memberlist reads a stream in one goroutine)
	deadline time.Time // zero: none of its own
	release  func()    // gives its slot back; safe to call twice
}

func (c *guardedConn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("%w (from %s)", errStreamTooLarge, c.RemoteAddr())
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *guardedConn) clamp(t time.Time) time.Time {
	if !c.deadline.IsZero() && (t.IsZero() || t.After(c.deadline)) {
		return c.deadline
	}
	return t
}

func (c *guardedConn) SetDeadline(t time.Time) error     { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *guardedConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.clamp(t)) }

func (c *guardedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
