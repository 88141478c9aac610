package http

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/internal/readfile"
	"github.com/proctor-run/proctor/observe"
)

// binding is one bound address: its TCP listener, bounded by
// max_connections, and the goroutine that accepts on it and hands each
// connection to whichever server pulls (see view). Two servers — the
// one in force and the one a change replaces — may serve one binding for
// a moment, so a change that keeps the address never closes the socket.
type binding struct {
	addr   string // as configured
	ln     net.Listener
	lim    *observe.ConnLimit
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	done   chan struct{} // the accept goroutine ended
}

// refusedBody is what a connection turned away at the limit reads.
const refusedBody = `{"error":{"kind":"limit","message":"too many connections: try again later"}}` + "\n"

var refusedResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
	strconv.Itoa(len(refusedBody)) + "\r\n\r\n" + refusedBody

// bind listens on addr. refused is called for each connection turned
// away; plain says whether it may be answered in plain HTTP.
func bind(addr string, max int, refused func(), plain func() bool) (*binding, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err // "listen tcp ADDR: bind: …" names it already
	}
	b := &binding{addr: addr, ln: ln, conns: make(chan net.Conn), closed: make(chan struct{}), done: make(chan struct{})}
	b.lim = observe.NewConnLimit(ln, max, b.refuser(refused, plain))
	go b.accept()
	return b, nil
}

// refuser answers a connection turned away with a 503 (when the server
// speaks plain HTTP), within 100 ms, and closes it.
func (b *binding) refuser(refused func(), plain func() bool) func(net.Conn) {
	return func(c net.Conn) {
		refused()
		if plain() {
			_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = c.Write([]byte(refusedResponse))
		}
		c.Close()
	}
}

func (b *binding) accept() {
	defer close(b.done)
	for {
		c, err := b.lim.Listener().Accept()
		if err != nil {
			return
		}
		select {
		case b.conns <- c:
		case <-b.closed:
			c.Close()
			return
		}
	}
}

// Addr is the address bound (the port chosen when addr asked for 0).
func (b *binding) Addr() net.Addr { return b.ln.Addr() }

// close stops accepting: the socket closes, new connections are refused
// by the kernel; those being served go on.
func (b *binding) close() {
	b.once.Do(func() {
		close(b.closed)
		b.lim.Listener().Close()
	})
	<-b.done
}

// view is one server's listener on a binding: closing it stops that
// server's accepting, not the binding's.
type view struct {
	b      *binding
	closed chan struct{}
	once   sync.Once
}

func newView(b *binding) *view { return &view{b: b, closed: make(chan struct{})} }

func (v *view) Accept() (net.Conn, error) {
	// Closed first: once Close has returned, a connection waiting on the
	// binding is left to the other server, not taken by the select's
	// random choice.
	select {
	case <-v.closed:
		return nil, net.ErrClosed
	case <-v.b.closed:
		return nil, net.ErrClosed
	default:
	}
	select {
	case c := <-v.b.conns:
		return c, nil
	case <-v.closed:
	case <-v.b.closed:
	}
	return nil, net.ErrClosed
}

func (v *view) Close() error {
	v.once.Do(func() { close(v.closed) })
	return nil
}

func (v *view) Addr() net.Addr { return v.b.Addr() }

// certs serves a certificate and key pair, read again when either file
// changes (looked at no more than once a second).
type certs struct {
	spec    TLSSpec
	log     *slog.Logger
	cur     atomic.Pointer[tls.Certificate]
	stamp   atomic.Pointer[string] // the files' sizes and times when read
	checked atomic.Int64           // unix nanos of the last look
}

func loadCerts(spec TLSSpec, log *slog.Logger) (*certs, error) {
	c := &certs{spec: spec, log: log}
	st, err := c.stampNow()
	if err != nil {
		return nil, err
	}
	pair, err := readKeyPair(spec)
	if err != nil {
		return nil, err
	}
	c.cur.Store(&pair)
	c.stamp.Store(&st)
	c.checked.Store(time.Now().UnixNano())
	return c, nil
}

// maxTLSFile bounds a certificate or key file, as the cluster's.
const maxTLSFile = 1 << 20

// readKeyPair reads the certificate and key as configuration files are
// read (readfile.Regular: bounded, under the read deadline, never from
// /proc, /sys or /dev) and parses the pair.
func readKeyPair(spec TLSSpec) (tls.Certificate, error) {
	cert, _, err := readfile.Regular(context.Background(), spec.CertFile, maxTLSFile, 0)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: %s: %w", spec.CertFile, err)
	}
	key, _, err := readfile.Regular(context.Background(), spec.KeyFile, maxTLSFile, 0)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: %s: %w", spec.KeyFile, err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		// crypto/tls's errors say "tls: " themselves, and name no file.
		return tls.Certificate{}, fmt.Errorf("tls: cert_file %s, key_file %s: %s", spec.CertFile, spec.KeyFile, strings.TrimPrefix(err.Error(), "tls: "))
	}
	return pair, nil
}

func (c *certs) stampNow() (string, error) {
	var s string
	for _, f := range []string{c.spec.CertFile, c.spec.KeyFile} {
		// Under the read deadline, as a configuration file's stat.
		fi, err := readfile.Stat(context.Background(), f, 0, nil)
		if err != nil {
			return "", fmt.Errorf("tls: %w", err)
		}
		s += fmt.Sprintf("%d:%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return s, nil
}

// get is the tls.Config's GetCertificate.
func (c *certs) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := time.Now().UnixNano()
	last := c.checked.Load()
	if now-last >= int64(time.Second) && c.checked.CompareAndSwap(last, now) {
		if st, err := c.stampNow(); err == nil && st != *c.stamp.Load() {
			pair, err := readKeyPair(c.spec)
			if err != nil {
				c.log.Warn("tls: the changed certificate or key cannot be read; serving the previous one", "error", err)
			} else {
				c.cur.Store(&pair)
				c.log.Info("tls: certificate read again", "cert_file", c.spec.CertFile)
			}
			c.stamp.Store(&st)
		}
	}
	return c.cur.Load(), nil
}

func (c *certs) config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.get, NextProtos: []string{"http/1.1"}}
}
