package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/internal/backoff"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote"
)

// outFrame is a frame waiting to be written.
type outFrame struct {
	b []byte
}

// peer is the transport's side of one other node: its queue of frames and
// the goroutine (run) that owns its connection — dialing or accepting it,
// writing the queue to it, and reporting its loss.
type peer struct {
	n      *TCPNetwork
	name   string
	dialer bool // this node dials the peer
	st     *PeerCounters
	prev   <-chan struct{} // the previous entry of the same node
	done   chan struct{}

	ctx    context.Context
	cancel context.CancelFunc // stop: the peer is gone or the network closes

	addr      atomic.Pointer[string]
	up        atomic.Bool // the membership reports it alive: sends are accepted
	failing   atomic.Bool // it cannot be reached now: sends fail at once
	connected atomic.Bool
	had       bool // a connection was made (owned by run)

	errMu sync.Mutex
	err   string // why it is failing

	q *process.Queue[outFrame] // the frames to write, at most QueueSize

	poked  chan struct{} // up changed
	attach chan net.Conn // an accepted, authenticated connection
}

// conn is one connection to the peer.
type conn struct {
	nc   net.Conn
	w    *bufio.Writer
	done chan struct{} // the reader stopped
	err  error         // why, once done is closed
	stop func() bool

	// The heartbeat: the reader counts its reads from the network in
	// reads; run, on each tick, tells whether the count moved since the
	// last (heard is when it last did) and when it last wrote.
	reads atomic.Uint64
	seen  uint64
	heard time.Time
	wrote time.Time
	since time.Time // when it was made
}

// countingReader counts the reads that returned bytes.
type countingReader struct {
	r io.Reader
	n *atomic.Uint64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.n.Add(1)
	}
	return n, err
}

// errSilent: nothing arrived on a connection for TickInterval (the
// peer's ticks stopped coming: the link drops traffic, or the peer is
// stuck).
var errSilent = errors.New("nothing received (not even the heartbeat)")

func newPeer(n *TCPNetwork, name string, st *PeerCounters) *peer {
	p := &peer{
		n: n, name: name, dialer: dials(n.opts.Name, name), st: st, prev: st.lastDone,
		done: make(chan struct{}), q: process.NewQueue[outFrame](n.opts.QueueSize),
		poked: make(chan struct{}, 1), attach: make(chan net.Conn),
	}
	st.lastDone = p.done
	p.ctx, p.cancel = context.WithCancel(n.ctx)
	return p
}

func (p *peer) push(f outFrame) error {
	if err := p.q.Push(f); err != nil {
		return fmt.Errorf("node %q: %w (%d frames)", p.name, remote.ErrQueueFull, p.n.opts.QueueSize)
	}
	return nil
}

func (p *peer) queueLen() int { return p.q.Len() }

// dropQueue discards the frames not yet written; only run calls it.
func (p *peer) dropQueue() {
	var n uint64
	for _, ok := p.q.Pop(); ok; _, ok = p.q.Pop() {
		n++
	}
	p.st.Dropped.Add(n)
}

func (p *peer) poke() {
	select {
	case p.poked <- struct{}{}:
	default:
	}
}

func (p *peer) stop() { p.cancel() }

// handOver gives the peer's goroutine an accepted connection.
func (p *peer) handOver(nc net.Conn) {
	select {
	case p.attach <- nc:
	case <-p.ctx.Done():
		nc.Close()
	}
}

func (p *peer) setErr(err error) {
	p.errMu.Lock()
	p.err = err.Error()
	p.errMu.Unlock()
	p.failing.Store(true)
}

func (p *peer) lastErr() string {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err
}

// run owns the peer's connection until the peer stops.
func (p *peer) run() {
	defer p.n.wg.Done()
	defer close(p.done)
	if p.prev != nil {
		<-p.prev
	}
	log := p.n.log.With("peer", p.name)
	opts := &p.n.opts
	var (
		c      *conn
		redial = backoff.New(backoff.Policy{Initial: opts.ReconnectMin, Max: opts.ReconnectMax})
		retry  <-chan time.Time // dial again when it fires
		wait   *time.Timer      // an accepting side not connected in time
		warned bool             // a failure to connect was logged since the last success
	)
	// The heartbeat, as Erlang's net_ticktime: a connected peer ticks four
	// times per TickInterval; each tick sends a tick frame if nothing was
	// written since the last, and a connection that has read nothing for
	// TickInterval is closed.
	ticker := time.NewTicker(opts.TickInterval / 4)
	defer ticker.Stop()
	defer func() {
		if wait != nil {
			wait.Stop()
		}
	}()
	for {
		if c == nil && p.had && !p.dialer && !p.up.Load() && p.n.dropStranger(p) {
			// A node the membership never reported: its connection was
			// all there was of it.
			p.dropQueue()
			return
		}
		if c == nil && p.dialer && p.up.Load() && retry == nil && p.ctx.Err() == nil && !p.n.draining.Load() {
			nc, err := p.dial()
			switch {
			case err == nil:
				warned = false
				c = p.connect(nc)
				if err := p.flush(c); err != nil {
					p.lose(c, err, log)
					c, retry = nil, time.After(p.relax(c, &redial))
				}
			case p.ctx.Err() == nil:
				p.setErr(err)
				lvl := log.Debug
				if !warned || errors.Is(err, ErrAuth) {
					lvl, warned = log.Warn, true
				}
				d := redial.Next()
				lvl("transport: cannot connect; sends fail until it can", "address", p.addrString(), "retry_in", d.String(), "error", err)
				retry = time.After(d)
			}
		}
		var readerDone <-chan struct{}
		if c != nil {
			readerDone = c.done
		}
		var waitC <-chan time.Time
		if wait != nil {
			waitC = wait.C
		}
		// Connected, the queue is written as it fills; the frames queued
		// while it is not wait for the connection (which flushes them).
		var wake <-chan struct{}
		if c != nil {
			wake = p.q.Ready()
		}
		select {
		case <-p.ctx.Done():
			if c != nil {
				c.nc.Close()
				<-c.done
				p.connected.Store(false)
			}
			p.dropQueue()
			if p.n.ctx.Err() == nil {
				log.Info("transport: node down")
				p.n.recv.NodeDown(p.name)
			}
			return
		case <-wake:
			if c != nil {
				if err := p.flush(c); err != nil {
					p.lose(c, err, log)
					c, retry = nil, time.After(p.relax(c, &redial))
				}
			}
		case nc := <-p.attach:
			if c != nil {
				p.lose(c, errors.New("replaced by a new connection"), log)
			}
			c = p.connect(nc)
			if err := p.flush(c); err != nil {
				p.lose(c, err, log)
				c = nil
			}
		case <-p.poked:
			if c == nil && !p.dialer && p.up.Load() && wait == nil {
				wait = time.NewTimer(opts.ConnectWait)
			}
		case <-readerDone:
			p.lose(c, c.err, log)
			c, retry = nil, time.After(p.relax(c, &redial))
			if !p.dialer && wait == nil {
				wait = time.NewTimer(opts.ConnectWait)
			}
		case now := <-ticker.C:
			if c == nil {
				break
			}
			if err := p.heartbeat(c, now); err != nil {
				p.lose(c, err, log)
				c, retry = nil, time.After(p.relax(c, &redial))
				if !p.dialer && wait == nil {
					wait = time.NewTimer(opts.ConnectWait)
				}
			}
		case <-retry:
			retry = nil
		case <-waitC:
			wait = nil
			if c == nil && p.up.Load() {
				p.setErr(fmt.Errorf("node did not connect within %s", opts.ConnectWait))
				log.Warn("transport: the node has not connected; sends fail until it does", "waited", opts.ConnectWait.String())
			}
		}
	}
}

func (p *peer) addrString() string {
	if a := p.addr.Load(); a != nil {
		return *a
	}
	return ""
}

// dial connects to the peer and runs the dialer's side of the handshake.
func (p *peer) dial() (net.Conn, error) {
	opts := &p.n.opts
	addr := p.addrString()
	if addr == "" {
		return nil, errors.New("no transport address known")
	}
	ctx, cancel := context.WithTimeout(p.ctx, opts.DialTimeout)
	nc, err := opts.DialContext(ctx, "tcp", addr)
	cancel()
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(p.ctx, func() { nc.Close() })
	defer stop()
	_ = nc.SetDeadline(time.Now().Add(opts.HandshakeTimeout))
	sc, ekm, err := p.n.secure(p.ctx, nc, false)
	if err == nil {
		err = dialHandshake(sc, opts.Key, opts.Name, p.name, ekm)
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return sc, nil
}

// relax returns the delay before the next dial once connection c has
// ended: one that lasted a tick interval starts again from ReconnectMin;
// one lost sooner (made, then dropped at once: a loop, as with a peer that
// takes the connection and closes it) doubles it, up to ReconnectMax.
func (p *peer) relax(c *conn, redial *backoff.Backoff) time.Duration {
	if time.Since(c.since) >= p.n.opts.TickInterval {
		redial.Reset()
	} else {
		redial.Advance()
	}
	return redial.Delay()
}

// heartbeat runs on each tick of a connected peer: it closes c (the error
// says why) once it has read nothing for TickInterval, and sends a tick
// frame when nothing was written for a quarter of it.
func (p *peer) heartbeat(c *conn, now time.Time) error {
	every := p.n.opts.TickInterval
	if r := c.reads.Load(); r != c.seen {
		c.seen, c.heard = r, now
	} else if silent := now.Sub(c.heard); silent >= every {
		return fmt.Errorf("%w for %s", errSilent, silent.Round(time.Millisecond))
	}
	if now.Sub(c.wrote) < every/4 {
		return nil
	}
	c.wrote = now
	if err := c.nc.SetWriteDeadline(now.Add(p.n.opts.WriteTimeout)); err != nil {
		return err
	}
	if _, err := c.w.Write(tickFrame[:]); err != nil {
		return err
	}
	return c.w.Flush()
}

// connect makes nc the peer's connection and starts its reader.
func (p *peer) connect(nc net.Conn) *conn {
	p.had = true
	now := time.Now()
	c := &conn{nc: nc, w: bufio.NewWriterSize(nc, ioBufferSize), done: make(chan struct{}), heard: now, wrote: now, since: now}
	c.stop = context.AfterFunc(p.ctx, func() { nc.Close() })
	if p.st.Connects.Add(1) > 1 {
		p.st.Reconnects.Add(1)
	}
	p.connected.Store(true)
	p.failing.Store(false)
	p.n.log.Debug("transport: connected", "peer", p.name, "remote", nc.RemoteAddr().String())
	p.n.wg.Add(1)
	go p.read(c)
	return c
}

// lose ends connection c: it is closed, its reader has stopped, the frames
// not yet written are dropped (those in flight may be lost too), and the
// Receiver learns that the node went down.
func (p *peer) lose(c *conn, err error, log *slog.Logger) {
	c.stop()
	c.nc.Close()
	<-c.done
	p.connected.Store(false)
	// Until a new connection is made, sends fail at once (noconnection):
	// what would queue now could only wait for a dial that may fail, or
	// for the membership to declare the node gone.
	p.setErr(fmt.Errorf("connection lost: %w", err))
	p.dropQueue()
	switch {
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, errRefused), errors.Is(err, io.ErrUnexpectedEOF):
		p.n.limit.Log(log, slog.LevelError, "peer", p.name, "transport: bad input from the node; connection closed", "error", err)
	case p.n.draining.Load() && (errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)):
		// This node is leaving: the peer closing on it is the leave.
		log.Debug("transport: connection closed while leaving", "error", err)
	case errors.Is(err, errSilent):
		p.n.limit.Log(log, slog.LevelWarn, "peer", p.name, "transport: connection silent past the tick interval; closed", "tick_interval", p.n.opts.TickInterval.String(), "error", err)
	default:
		// Rate-limited: a connection made and lost at once repeats (its
		// redials back off, but a peer may keep dialing).
		p.n.limit.Log(log, slog.LevelInfo, "peer", p.name, "transport: connection lost", "error", err)
	}
	p.n.recv.NodeDown(p.name)
}

// errRefused: the Receiver refused a frame (malformed or forged).
var errRefused = errors.New("frame refused")

// read hands each frame of c to the Receiver until the connection ends or
// a frame is refused.
func (p *peer) read(c *conn) {
	defer p.n.wg.Done()
	defer close(c.done)
	fr := newFrameReader(countingReader{c.nc, &c.reads}, p.n.opts.MaxFrame)
	var frames, bytes uint64
	for {
		if frames > 0 && fr.r.Buffered() <= fr.skip {
			// About to wait for the network: publish the counts.
			p.st.FramesIn.Add(frames)
			p.st.BytesIn.Add(bytes)
			frames, bytes = 0, 0
		}
		b, err := fr.next()
		if err != nil {
			c.err = err
			break
		}
		frames++
		bytes += uint64(len(b) + frameHeaderSize)
		if err := p.n.recv.Receive(p.name, b); err != nil {
			c.err = fmt.Errorf("%w: %w", errRefused, err)
			break
		}
	}
	p.st.FramesIn.Add(frames)
	p.st.BytesIn.Add(bytes)
}

// flush writes the queue to c until it is empty, then flushes the buffer:
// the frames queued while a batch is written go out with the next, so a
// busy peer's writes are batched and an idle one's are not delayed.
func (p *peer) flush(c *conn) error {
	if err := c.nc.SetWriteDeadline(time.Now().Add(p.n.opts.WriteTimeout)); err != nil {
		return err
	}
	var frames, bytes uint64
	defer func() {
		p.st.FramesOut.Add(frames)
		p.st.BytesOut.Add(bytes)
	}()
	for {
		f, ok := p.q.Pop()
		if !ok {
			if frames > 0 {
				c.wrote = time.Now()
			}
			return c.w.Flush()
		}
		if err := writeFrame(c.w, f.b); err != nil {
			p.st.Dropped.Add(1)
			return err
		}
		frames++
		bytes += uint64(len(f.b) + frameHeaderSize)
		remote.ReleaseFrame(f.b) // its bytes are in the writer's buffer, or written
	}
}
