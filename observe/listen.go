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
	// MaxConns bounds the connections served at once. Past it, new ones
	// wait in the kernel's accept queue, holding no descriptor of the
	// node, until one closes. Default: 256.
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

// limitListener accepts at most cap(sem) connections at once; Accept waits
// for a served one to close. (golang.org/x/net/netutil.LimitListener does
// the same; these few lines spare the dependency.)
type limitListener struct {
	net.Listener
	sem    chan struct{}
	closed chan struct{}
	once   sync.Once
	open   atomic.Int64
	peak   atomic.Int64 // the most connections ever open at once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), closed: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	n := l.open.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &limitConn{Conn: c, l: l}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		<-c.l.sem
	})
	return err
}
