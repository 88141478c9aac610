package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// ListenOptions bound what clients can hold of the endpoint, so that a
// flood of connections cannot take the node's file descriptors (and with
// them /healthz and reloads). Every zero field takes its default.
type ListenOptions struct {
	// Logger receives the server's errors. Default: slog.Default().
	Logger *slog.Logger
	// ReadHeaderTimeout bounds reading a request's headers, and so how
	// long a connection that sends nothing is kept. Default: 5s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request. Default: 30s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response. Default: 30s.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request. Default: 60s.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers; larger ones get 431.
	// Default: 64 KiB.
	MaxHeaderBytes int
	// MaxConns bounds the connections served at once. A connection that
	// arrives at the limit closes the keep-alive connection idle the
	// longest, so idle clients cannot starve the probes; when none is
	// idle, it waits (holding one descriptor) until one closes or turns
	// idle, and the connections behind it wait in the kernel's accept
	// queue. Default: 256.
	MaxConns int
}

// Defaults of ListenOptions.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConns          = 256
)

func (o ListenOptions) withDefaults() ListenOptions {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	return o
}

// Server is a running endpoint.
type Server struct {
	srv  *http.Server
	ln   *limitListener
	addr net.Addr
	done chan error
}

// Listen binds addr (host:port; port 0 picks a free one) and serves h.
func Listen(addr string, h http.Handler, opts ListenOptions) (*Server, error) {
	opts = opts.withDefaults()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	ll := newLimitListener(ln, opts.MaxConns)
	s := &Server{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: opts.ReadHeaderTimeout,
			ReadTimeout:       opts.ReadTimeout,
			WriteTimeout:      opts.WriteTimeout,
			IdleTimeout:       opts.IdleTimeout,
			MaxHeaderBytes:    opts.MaxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
			ConnState:         ll.track,
			// The live view's streams look at their connection (see
			// peerWindow).
			ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				return context.WithValue(ctx, connKey{}, c)
			},
		},
		ln:   ll,
		addr: ln.Addr(),
		done: make(chan error, 1),
	}
	if sc, ok := h.(streamCloser); ok {
		s.srv.RegisterOnShutdown(sc.CloseStreams)
	}
	go func() {
		err := s.srv.Serve(ll)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.addr }

// OpenConns returns the number of connections being served.
func (s *Server) OpenConns() int { return int(s.ln.open.Load()) }

// Shutdown stops accepting, waits for requests in flight until ctx ends,
// then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	if serr := <-s.done; serr != nil && err == nil {
		err = serr
	}
	return err
}

// limitListener serves at most max connections at once. At the
// limit, Accept closes the connection idle the longest (an idle keep-alive
// connection waits for a next request that may never come; its client
// reconnects when it has one), else waits for a served one to close.
// (golang.org/x/net/netutil.LimitListener bounds the same way but leaves
// idle connections holding every slot.)
type limitListener struct {
	net.Listener
	max    atomic.Int64 // may change while it serves (setMax)
	closed chan struct{}
	once   sync.Once
	open   atomic.Int64 // the connections holding a slot
	peak   atomic.Int64 // the most connections ever open at once
	// conns are the connections holding a slot. Each says itself whether
	// it waits for its next request (limitConn.idleSince, which the
	// server's ConnState hook sets without a lock: twice a request);
	// closeIdlest reads them only at the limit.
	mu    sync.Mutex
	conns map[*limitConn]struct{}
	// idleSeq orders the turns to idle: the smallest idleSince is the
	// connection idle the longest.
	idleSeq atomic.Int64
	// freed wakes an Accept that waits for a slot when a connection
	// turns idle or closes, or the limit rises.
	freed chan struct{}
	// refuse, when set, is given (on a goroutine of its own) each
	// connection past the limit while none is idle, instead of waiting.
	refuse func(net.Conn)
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	l := &limitListener{Listener: ln, closed: make(chan struct{}),
		conns: map[*limitConn]struct{}{}, freed: make(chan struct{}, 1)}
	l.max.Store(int64(n))
	return l
}

// setMax changes the limit in place: the connections being served stay;
// past a lowered limit new ones wait (or are refused) until enough close.
func (l *limitListener) setMax(n int) {
	l.max.Store(int64(n))
	l.wake()
}

// acquire takes a slot if one is free.
func (l *limitListener) acquire() bool {
	for {
		n := l.open.Load()
		if n >= l.max.Load() {
			return false
		}
		if l.open.CompareAndSwap(n, n+1) {
			for p := l.peak.Load(); n+1 > p && !l.peak.CompareAndSwap(p, n+1); p = l.peak.Load() {
			}
			return true
		}
	}
}

// wake wakes an Accept waiting for a slot, if any.
func (l *limitListener) wake() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for !l.acquire() {
		if l.closeIdlest() {
			continue
		}
		if l.refuse != nil {
			// Past the limit with none idle: this connection is turned
			// away, and the next one tries.
			go l.refuse(c)
			if c, err = l.Listener.Accept(); err != nil {
				return nil, err
			}
			continue
		}
		select {
		case <-l.freed:
		case <-l.closed:
			c.Close()
			return nil, net.ErrClosed
		}
	}
	lc := &limitConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

// closeIdlest closes the connection idle the longest; false if none is.
func (l *limitListener) closeIdlest() bool {
	l.mu.Lock()
	var oldest *limitConn
	var since int64
	for c := range l.conns {
		if t := c.idleSince.Load(); t != 0 && (oldest == nil || t < since) {
			oldest, since = c, t
		}
	}
	l.mu.Unlock()
	// Claimed, so that a second Accept at the limit picks another; one
	// that turned active meanwhile is left alone.
	if oldest == nil || !oldest.idleSince.CompareAndSwap(since, 0) {
		return oldest != nil // another try: the next is idle the longest now
	}
	oldest.Close()
	return true
}

// idleConns is how many connections wait for their next request.
func (l *limitListener) idleConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := range l.conns {
		if c.idleSince.Load() != 0 {
			n++
		}
	}
	return n
}

// track is the server's ConnState hook.
func (l *limitListener) track(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*limitConn)
	if !ok {
		return
	}
	if state == http.StateIdle {
		c.idleSince.Store(l.idleSeq.Add(1))
		l.wake()
		return
	}
	c.idleSince.Store(0)
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
	// idleSince is when the connection turned idle (see idleSeq), 0
	// while it is not.
	idleSince atomic.Int64
}

// Unwrap returns the connection accepted.
func (c *limitConn) Unwrap() net.Conn { return c.Conn }

// connKey holds a request's connection in its context.
type connKey struct{}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.idleSince.Store(0)
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.open.Add(-1)
		c.l.wake()
	})
	return err
}
