package cluster

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

// wireRecorder is a listener whose connections record every byte they
// carry, both ways, as it crosses the network.
type wireRecorder struct {
	net.Listener
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *wireRecorder) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordedConn{Conn: c, l: l}, nil
}

func (l *wireRecorder) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.buf.Bytes())
}

type recordedConn struct {
	net.Conn
	l *wireRecorder
}

func (c *recordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.l.mu.Lock()
	c.l.buf.Write(p[:n])
	c.l.mu.Unlock()
	return n, err
}

func (c *recordedConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.buf.Write(p)
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// framesReceiver keeps what a bare network receives.
type framesReceiver struct {
	mu     sync.Mutex
	frames [][]byte
	n      atomic.Int64
}

func (r *framesReceiver) Receive(_ string, b []byte) error {
	r.mu.Lock()
	r.frames = append(r.frames, bytes.Clone(b))
	r.mu.Unlock()
	r.n.Add(1)
	return nil
}
func (r *framesReceiver) NodeDown(string) {}

// startBare starts a bare network; wrap, when set, replaces its listener
// before it accepts.
func startBare(t *testing.T, opts TCPOptions, wrap func(net.Listener) net.Listener) (*TCPNetwork, *framesReceiver) {
	t.Helper()
	opts.Listen = "127.0.0.1:0"
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	n, err := ListenTCP(opts)
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		n.ln = wrap(n.ln)
	}
	r := &framesReceiver{}
	if err := n.Start(r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n, r
}

// What a node sends another does not cross the network in plain bytes
// with a secret or with certificates; without either it does (the
// recorder sees what the network sees).
func TestTransportIsEncryptedOnTheWire(t *testing.T) {
	t.Parallel()
	keys, _ := DeriveKeys(testSecret)
	pki := newTestPKI(t)
	payload := []byte("the-payload-nobody-else-may-read-0123456789")
	for _, tt := range []struct {
		name     string
		key      []byte
		tls      func(node string) *TLSOptions
		readable bool
	}{
		{"no secret, no TLS", noSecretKey, func(string) *TLSOptions { return nil }, true},
		{"secret", keys.Handshake, func(string) *TLSOptions { return &TLSOptions{} }, false},
		{"mutual TLS", noSecretKey, func(node string) *TLSOptions { return pki.files(t, pki.ca1, node, nil) }, false},
		{"mutual TLS and secret", keys.Handshake, func(node string) *TLSOptions { return pki.files(t, pki.ca1, node, nil) }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &wireRecorder{}
			b, recvB := startBare(t, TCPOptions{Name: "b", Key: tt.key, TLS: tt.tls("b")}, func(l net.Listener) net.Listener {
				rec.Listener = l
				return rec
			})
			a, recvA := startBare(t, TCPOptions{Name: "a", Key: tt.key, TLS: tt.tls("a")}, nil)
			a.PeerUp("b", b.Addr())
			b.PeerUp("a", a.Addr())
			testutil.Eventually(t, "a's frame delivered", func() bool {
				_ = a.Send("b", payload)
				return recvB.n.Load() > 0
			})
			testutil.Eventually(t, "b's answer delivered", func() bool {
				_ = b.Send("a", append([]byte("answer:"), payload...))
				return recvA.n.Load() > 0
			})
			recvB.mu.Lock()
			got := recvB.frames[0]
			recvB.mu.Unlock()
			if !bytes.Equal(got, payload) {
				t.Fatalf("b received %q", got)
			}
			wire := rec.bytes()
			if len(wire) < len(payload) {
				t.Fatalf("the recorder saw %d bytes", len(wire))
			}
			if seen := bytes.Contains(wire, payload); seen != tt.readable {
				t.Fatalf("payload readable on the wire: %v, want %v", seen, tt.readable)
			}
			if seen := bytes.Contains(wire, []byte("PRCT")); seen != tt.readable {
				t.Fatalf("handshake readable on the wire: %v, want %v", seen, tt.readable)
			}
		})
	}
}

// A man in the middle who runs a TLS session with each end and relays the
// handshake between them cannot make a connection: each proof covers the
// keying material of the session it was made in. A relay that forwards
// the TCP bytes unread (a router) works, so the relay itself is sound.
func TestRelayedProofIsRefused(t *testing.T) {
	t.Parallel()
	keys, _ := DeriveKeys(testSecret)
	for _, terminate := range []bool{false, true} {
		name := map[bool]string{false: "forwarding relay", true: "terminating relay"}[terminate]
		t.Run(name, func(t *testing.T) {
			logs := &testutil.SyncBuffer{}
			b, recvB := startBare(t, TCPOptions{Name: "b", Key: keys.Handshake, TLS: &TLSOptions{}}, nil)
			a, _ := startBare(t, TCPOptions{Name: "a", Key: keys.Handshake, TLS: &TLSOptions{}, Logger: testLogger(logs), ReconnectMax: 100 * time.Millisecond}, nil)
			relay := startRelay(t, b.Addr(), terminate)
			a.PeerUp("b", relay)
			if !terminate {
				testutil.Eventually(t, "a frame through the relay", func() bool {
					_ = a.Send("b", []byte("hi"))
					return recvB.n.Load() > 0
				})
				return
			}
			testutil.Eventually(t, "the relayed proof refused", func() bool {
				_ = a.Send("b", []byte("hi"))
				return strings.Contains(logs.String(), "authentication failed")
			})
			if n := recvB.n.Load(); n != 0 {
				t.Fatalf("b received %d frames through a man in the middle", n)
			}
		})
	}
}

// startRelay listens on 127.0.0.1 and relays each connection to target:
// forwarding the bytes, or (terminate) as a man in the middle with a TLS
// session of its own with each end, relaying the plain text.
func startRelay(t *testing.T, target string, terminate bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ephemeralCertificate()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			open = append(open, in, out)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer in.Close()
				defer out.Close()
				var x, y io.ReadWriter = in, out
				if terminate {
					cfg := baseTLSConfig()
					cfg.Certificates = []tls.Certificate{cert}
					ts := tls.Server(in, cfg)
					if ts.Handshake() != nil {
						return
					}
					tc, err := tlsClient(out, baseTLSConfig())
					if err != nil {
						return
					}
					x, y = ts, tc
				}
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(y, x); done <- struct{}{} }()
				go func() { _, _ = io.Copy(x, y); done <- struct{}{} }()
				<-done
				in.Close()
				out.Close()
				<-done
			}()
		}
	}()
	return ln.Addr().String()
}

// Mutual TLS refuses what its CA did not sign, what has expired, and a
// node that presents no certificate; a good certificate connects.
func TestBadCertificatesAreRefused(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	expired := time.Now().Add(-time.Hour)
	for _, tt := range []struct {
		name string
		a, b func(t *testing.T) *TLSOptions
		ok   bool
	}{
		{"good", func(t *testing.T) *TLSOptions { return pki.files(t, pki.ca1, "a", nil) },
			func(t *testing.T) *TLSOptions { return pki.files(t, pki.ca1, "b", nil) }, true},
		{"dialer signed by another CA", func(t *testing.T) *TLSOptions { return pki.filesTrusting(t, pki.ca2, "a", pki.ca1) },
			func(t *testing.T) *TLSOptions { return pki.files(t, pki.ca1, "b", nil) }, false},
		{"accepter signed by another CA", func(t *testing.T) *TLSOptions { return pki.files(t, pki.ca1, "a", nil) },
			func(t *testing.T) *TLSOptions { return pki.filesTrusting(t, pki.ca2, "b", pki.ca1) }, false},
		{"dialer expired", func(t *testing.T) *TLSOptions { return pki.files(t, pki.ca1, "a", &expired) },
			func(t *testing.T) *TLSOptions { return pki.files(t, pki.ca1, "b", nil) }, false},
		{"accepter expired", func(t *testing.T) *TLSOptions { return pki.files(t, pki.ca1, "a", nil) },
			func(t *testing.T) *TLSOptions { return pki.files(t, pki.ca1, "b", &expired) }, false},
		{"dialer without a certificate", func(*testing.T) *TLSOptions { return &TLSOptions{} },
			func(t *testing.T) *TLSOptions { return pki.files(t, pki.ca1, "b", nil) }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logsA, logsB := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
			b, recvB := startBare(t, TCPOptions{Name: "b", TLS: tt.b(t), Logger: testLogger(logsB)}, nil)
			a, _ := startBare(t, TCPOptions{Name: "a", TLS: tt.a(t), Logger: testLogger(logsA), ReconnectMax: 100 * time.Millisecond}, nil)
			a.PeerUp("b", b.Addr())
			if tt.ok {
				testutil.Eventually(t, "a frame", func() bool {
					_ = a.Send("b", []byte("hi"))
					return recvB.n.Load() > 0
				})
				return
			}
			testutil.Eventually(t, "the TLS handshake to fail", func() bool {
				_ = a.Send("b", []byte("hi"))
				return strings.Contains(logsA.String()+logsB.String(), ErrTLS.Error())
			})
			if p := a.Peers(); len(p) != 1 || p[0].Connected {
				t.Fatalf("a's peers: %+v", p)
			}
			if n := recvB.n.Load(); n != 0 {
				t.Fatalf("b received %d frames", n)
			}
		})
	}
}

// Certificates rotate without a restart: a node reads its files again
// when they change, and keeps the old ones while a new file is broken.
func TestCertificateRotation(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	logsB := &testutil.SyncBuffer{}
	bFiles := pki.files(t, pki.ca1, "b", nil)
	b, recvB := startBare(t, TCPOptions{Name: "b", TLS: bFiles, Logger: testLogger(logsB)}, nil)
	// a's certificate is from CA 2, which b does not trust yet.
	a, _ := startBare(t, TCPOptions{Name: "a", TLS: pki.filesTrusting(t, pki.ca2, "a", pki.ca1), Logger: quiet, ReconnectMax: 100 * time.Millisecond}, nil)
	a.PeerUp("b", b.Addr())
	testutil.Eventually(t, "b to refuse a's certificate", func() bool {
		_ = a.Send("b", []byte("hi"))
		return strings.Contains(logsB.String(), ErrTLS.Error())
	})
	// A broken CA file is not taken: the old certificates stay.
	touch(t, bFiles.CAFile, []byte("not PEM"))
	testutil.Eventually(t, "the broken file reported", func() bool {
		_ = a.Send("b", []byte("hi"))
		return strings.Contains(logsB.String(), "cannot reload the TLS certificates")
	})
	if recvB.n.Load() != 0 {
		t.Fatal("a connected with a certificate b does not trust")
	}
	// b trusts both CAs now: a's next dial connects, with no restart.
	touch(t, bFiles.CAFile, append(pki.ca1.pem(), pki.ca2.pem()...))
	testutil.Eventually(t, "a to connect once b trusts its CA", func() bool {
		_ = a.Send("b", []byte("hi"))
		return recvB.n.Load() > 0
	})
	if !strings.Contains(logsB.String(), "TLS certificates reloaded") {
		t.Fatal("the reload was not logged")
	}
}

// touch writes b to path and moves its modification time on, so a
// rewrite within the file system's time resolution is seen too.
func touch(t *testing.T, path string, b []byte) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	mod := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// Without a secret or TLS, a node refuses to bind an address other hosts
// reach, unless told it is insecure. (Only the refusal is tested: it
// comes before anything is bound.)
func TestInsecureBindIsRefused(t *testing.T) {
	t.Parallel()
	for _, opts := range []Options{
		{Bind: "0.0.0.0:0"},
		{Bind: "127.0.0.1:0", TransportBind: "0.0.0.0:0"},
		{Bind: "10.0.0.1:0"},
	} {
		opts.Node = process.NewNode(process.Options{Name: "n1", Logger: quiet})
		opts.Logger = quiet
		c, err := Start(opts)
		if !errors.Is(err, ErrInsecure) || !strings.Contains(err.Error(), "--cluster-insecure") {
			if c != nil {
				_ = c.Close()
			}
			t.Fatalf("%s / %s: %v", opts.Bind, opts.TransportBind, err)
		}
	}
	if got := exposedAddr("127.0.0.1:1", "localhost:2"); got != "" {
		t.Fatalf("loopback addresses exposed: %q", got)
	}
}

// testPKI is two CAs for tests.
type testPKI struct{ ca1, ca2 *testCA }

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func (ca *testCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

func newTestPKI(t *testing.T) *testPKI {
	return &testPKI{ca1: newTestCA(t, "ca1"), ca2: newTestCA(t, "ca2")}
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key}
}

// files writes a certificate for node signed by ca (expiring at notAfter,
// or in an hour), its key, and ca as the CA file.
func (p *testPKI) files(t *testing.T, ca *testCA, node string, notAfter *time.Time) *TLSOptions {
	return p.write(t, ca, node, notAfter, ca)
}

// filesTrusting is files with a CA file of trust instead of ca.
func (p *testPKI) filesTrusting(t *testing.T, ca *testCA, node string, trust *testCA) *TLSOptions {
	return p.write(t, ca, node, nil, trust)
}

func (p *testPKI) write(t *testing.T, ca *testCA, node string, notAfter *time.Time, trust *testCA) *TLSOptions {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(time.Hour)
	if notAfter != nil {
		end = *notAfter
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: node},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: end,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := &TLSOptions{CertFile: filepath.Join(dir, "node.crt"), KeyFile: filepath.Join(dir, "node.key"), CAFile: filepath.Join(dir, "ca.crt")}
	for path, b := range map[string][]byte{
		o.CertFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		o.KeyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		o.CAFile:   trust.pem(),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return o
}
