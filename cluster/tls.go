package cluster

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"sync"
	"time"

	"github.com/proctor-run/proctor/internal/readfile"
	"github.com/proctor-run/proctor/value"
)

// TLSOptions secure the transport with TLS 1.3 (crypto/tls). The zero
// value is TLS with an ephemeral self-signed certificate, made when the
// network starts and never checked by the other end: that is what a node
// with a cluster secret and no certificates runs, and the handshake's
// proof of the secret, computed over the TLS connection's exported keying
// material, authenticates both ends (a man in the middle, who runs a TLS
// session with each, cannot relay it).
//
// CertFile, KeyFile and CAFile (PEM) together give mutual TLS: each end
// presents its certificate and checks the other's against the CA (its
// chain and validity; not a host name, as peers are dialed by address).
// The files are read again when they change (checked at each handshake),
// so certificates rotate without a restart; a file that fails to load
// leaves the previous certificates in use, with a logged warning.
type TLSOptions struct {
	CertFile, KeyFile, CAFile string
}

func (o *TLSOptions) mutual() bool { return o != nil && o.CertFile != "" }

// ekmLabel is the label of the keying material the handshake's proofs
// are computed over (RFC 5705 / RFC 8446 7.5 exporters).
const ekmLabel = "EXPORTER-proctor-transport-handshake"

// ekmSize is how many bytes of keying material the proofs cover.
const ekmSize = 32

// ErrTLS: the TLS handshake failed (the other end speaks no TLS, or its
// certificate is not one this node accepts).
var ErrTLS = value.Sentinel("cluster.tls", value.KindNoConnection, "transport TLS handshake failed")

// transportTLS makes each connection's TLS configuration.
type transportTLS struct {
	ephemeral tls.Certificate // without files
	files     *certFiles      // with files: mutual TLS
}

func newTransportTLS(o *TLSOptions, log *slog.Logger) (*transportTLS, error) {
	t := &transportTLS{}
	if o.mutual() {
		if o.KeyFile == "" || o.CAFile == "" {
			return nil, errors.New("transport TLS: a certificate needs its key file and a CA file")
		}
		t.files = &certFiles{opts: *o, log: log}
		if _, _, err := t.files.load(); err != nil {
			return nil, err
		}
		return t, nil
	}
	cert, err := ephemeralCertificate()
	if err != nil {
		return nil, fmt.Errorf("transport TLS: %w", err)
	}
	t.ephemeral = cert
	return t, nil
}

func baseTLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13}
}

// server returns the configuration of an accepted connection.
func (t *transportTLS) server() *tls.Config {
	c := baseTLSConfig()
	if t.files == nil {
		c.Certificates = []tls.Certificate{t.ephemeral}
		return c
	}
	cert, pool, _ := t.files.load()
	c.Certificates = []tls.Certificate{*cert}
	c.ClientAuth = tls.RequireAndVerifyClientCert
	c.ClientCAs = pool
	return c
}

// client returns the configuration of a dialed connection.
func (t *transportTLS) client() *tls.Config {
	c := baseTLSConfig()
	// The standard check would compare the certificate with the host
	// dialed; peers are dialed by the address their metadata advertises,
	// so the chain is checked (below) and the handshake's proof or the
	// CA authenticate the node. Without files nothing is checked here:
	// the proof over the keying material authenticates.
	c.InsecureSkipVerify = true
	if t.files == nil {
		return c
	}
	cert, pool, _ := t.files.load()
	c.Certificates = []tls.Certificate{*cert}
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the node presented no certificate")
		}
		inter := x509.NewCertPool()
		for _, ic := range cs.PeerCertificates[1:] {
			inter.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
			Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		return err
	}
	return c
}

// tlsConn is a TLS connection whose Close closes the TCP connection at
// once: tls.Conn's own Close first writes a close_notify alert, which waits
// behind a writer blocked on a peer that does not read.
type tlsConn struct {
	*tls.Conn
	raw net.Conn
}

func (c tlsConn) Close() error { return c.raw.Close() }

// secure runs the TLS handshake over raw (its deadline already set) and
// returns the connection and its exported keying material. Without TLS it
// returns raw and no keying material.
func (n *TCPNetwork) secure(ctx context.Context, raw net.Conn, server bool) (net.Conn, []byte, error) {
	if n.tls == nil {
		return raw, nil, nil
	}
	var tc *tls.Conn
	if server {
		tc = tls.Server(raw, n.tls.server())
	} else {
		tc = tls.Client(raw, n.tls.client())
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrTLS, err)
	}
	cs := tc.ConnectionState()
	ekm, err := cs.ExportKeyingMaterial(ekmLabel, nil, ekmSize)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrTLS, err)
	}
	return tlsConn{Conn: tc, raw: raw}, ekm, nil
}

// ephemeralCertificate makes a self-signed ECDSA P-256 certificate that
// lives as long as the process.
func ephemeralCertificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "proctor transport (ephemeral)"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// certFiles holds the certificates of mutual TLS, read from their files
// and read again when a file changes.
type certFiles struct {
	opts TLSOptions
	log  *slog.Logger

	mu     sync.Mutex
	stamps [3]fileStamp
	failed [3]fileStamp // the stamps of the last load that failed: logged once
	cert   *tls.Certificate
	pool   *x509.CertPool
}

// fileStamp tells whether a file changed: its modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampsOf(paths ...string) ([3]fileStamp, error) {
	var s [3]fileStamp
	for i, p := range paths {
		// Under the read deadline, as the reads are.
		fi, err := readfile.Stat(context.Background(), p, 0, nil)
		if err != nil {
			return s, err
		}
		s[i] = fileStamp{fi.ModTime(), fi.Size()}
	}
	return s, nil
}

// load returns the current certificate and CA pool, reading the files
// again if one changed since they were read. The first load's failure is
// returned; a later one keeps what was loaded before.
func (f *certFiles) load() (*tls.Certificate, *x509.CertPool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.opts
	stamps, err := stampsOf(o.CertFile, o.KeyFile, o.CAFile)
	if err == nil && f.cert != nil && stamps == f.stamps {
		return f.cert, f.pool, nil
	}
	var cert tls.Certificate
	var pool *x509.CertPool
	if err == nil {
		cert, pool, err = readCertFiles(o)
	}
	if err != nil {
		if f.cert == nil {
			return nil, nil, err
		}
		if stamps != f.failed {
			f.failed = stamps
			f.log.Warn("transport: cannot reload the TLS certificates; the previous ones stay in use", "error", err)
		}
		return f.cert, f.pool, nil
	}
	if f.cert != nil {
		f.log.Info("transport: TLS certificates reloaded", "cert", o.CertFile, "ca", o.CAFile)
	}
	f.cert, f.pool, f.stamps = &cert, pool, stamps
	return f.cert, f.pool, nil
}

// maxTLSFile bounds each of the certificate, key and CA files: 1 MiB holds
// hundreds of PEM certificates.
const maxTLSFile = 1 << 20

// readCertFiles reads and checks the certificate, its key and the CA.
// Each is read as a configuration file is (readfile.Regular: at most
// maxTLSFile, nothing under /proc, /sys or /dev, within
// readfile.DefaultReadTimeout), so that a hung mount fails the load
// instead of blocking every handshake behind it.
func readCertFiles(o TLSOptions) (tls.Certificate, *x509.CertPool, error) {
	var pem [3][]byte
	for i, p := range []string{o.CertFile, o.KeyFile, o.CAFile} {
		b, _, err := readfile.Regular(context.Background(), p, maxTLSFile, 0)
		if err != nil {
			return tls.Certificate{}, nil, fmt.Errorf("transport TLS: %s: %w", p, err)
		}
		pem[i] = b
	}
	cert, err := tls.X509KeyPair(pem[0], pem[1])
	if err != nil {
		return cert, nil, fmt.Errorf("transport TLS: certificate %s, key %s: %w", o.CertFile, o.KeyFile, err)
	}
	ca := pem[2]
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) || len(bytes.TrimSpace(ca)) == 0 {
		return cert, nil, fmt.Errorf("transport TLS: CA %s: no PEM certificate in it", o.CAFile)
	}
	return cert, pool, nil
}
