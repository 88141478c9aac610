package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/proctor-run/proctor/value"
)

// The transport's handshake, version ProtocolVersion. The dialing node D
// and the accepting node A prove to each other that they hold the
// handshake key K (derived from the cluster secret; without a secret K is
// derived from the empty string and proves nothing) before any frame is
// exchanged:
//
//	D -> A  hello      "PRCT", version, name D, nonce nD (32 random bytes)
//	A -> D  hello      "PRCT", version, name A, nonce nA
//	A -> D  proof      HMAC-SHA256(K, "accept" | D | A | nD | nA | ekm)
//	D -> A  proof      HMAC-SHA256(K, "dial"   | D | A | nD | nA | ekm)
//	A -> D  ok         one byte, 1
//
// The handshake runs inside TLS 1.3 (tls.go) when the cluster has a secret
// or certificates, and ekm is 32 bytes of the TLS connection's exported
// keying material: the proofs are bound to the one TLS session they cross,
// so a man in the middle who runs a TLS session with each end cannot relay
// them from one session to the other. Without TLS ekm is empty.
//
// Names are a length byte and 1 to 255 bytes; in the MACs each name is
// preceded by its length, so no two pairs of names read alike. Each side
// checks the other's proof over both fresh nonces, so a recorded exchange
// cannot be replayed, and over both names, so a proof made for one pair of
// nodes does not serve another. D also checks that A is the node it meant
// to reach. A version that differs ends the handshake: each side sends its
// hello first, so the other learns why.
//
// The handshake authenticates the connection; TLS encrypts and
// integrity-protects it and what follows (see docs/cluster.md).
const (
	handshakeMagic = "PRCT"
	nonceSize      = 32
	macSize        = sha256.Size
	maxNameLen     = 255
	handshakeOK    = 1
)

// Handshake failures.
var (
	// ErrHandshake: the other end did not follow the handshake (bad
	// magic, a malformed name, a version this node does not speak, not
	// the node expected).
	ErrHandshake = value.Sentinel("cluster.handshake", value.KindNoConnection, "transport handshake failed")
	// ErrAuth: the other end's proof is wrong: it does not hold the
	// cluster secret.
	ErrAuth = value.Sentinel("cluster.auth", value.KindNoConnection, "transport handshake: authentication failed (a different cluster secret?)")

	errOtherVersion = errors.New("another protocol version")
)

// hello is the first message of each side.
type hello struct {
	version byte
	name    string
	nonce   [nonceSize]byte
}

func newHello(name string) (hello, error) {
	h := hello{version: ProtocolVersion, name: name}
	if _, err := rand.Read(h.nonce[:]); err != nil {
		return h, err
	}
	return h, nil
}

func (h hello) append(b []byte) []byte {
	b = append(b, handshakeMagic...)
	b = append(b, h.version, byte(len(h.name)))
	b = append(b, h.name...)
	return append(b, h.nonce[:]...)
}

// readHello reads a hello from r. It reads no more than a hello can hold.
func readHello(r io.Reader) (hello, error) {
	var h hello
	var head [len(handshakeMagic) + 2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return h, fmt.Errorf("%w: reading hello: %w", ErrHandshake, err)
	}
	if string(head[:len(handshakeMagic)]) != handshakeMagic {
		return h, fmt.Errorf("%w: not a proctor transport (magic %q)", ErrHandshake, head[:len(handshakeMagic)])
	}
	h.version = head[len(handshakeMagic)]
	n := int(head[len(handshakeMagic)+1])
	if n == 0 {
		return h, fmt.Errorf("%w: empty node name", ErrHandshake)
	}
	body := make([]byte, n+nonceSize)
	if _, err := io.ReadFull(r, body); err != nil {
		return h, fmt.Errorf("%w: reading hello: %w", ErrHandshake, err)
	}
	h.name = string(body[:n])
	copy(h.nonce[:], body[n:])
	if err := checkNodeName(h.name); err != nil {
		return h, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	if h.version != ProtocolVersion {
		return h, fmt.Errorf("%w: %w: node %q speaks transport protocol %d (this node speaks %d)", ErrHandshake, errOtherVersion, h.name, h.version, ProtocolVersion)
	}
	return h, nil
}

// checkNodeName refuses a name that cannot be a node's: empty, too long,
// or holding bytes that PIDs, names and logs could not carry.
func checkNodeName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("node name of %d bytes: want 1 to %d", len(name), maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c <= ' ' || c == 0x7f, c == '<', c == '>', c == ',', c == ':', c == '@':
			return fmt.Errorf("node name %q: may not hold spaces, control characters or any of <>,:@", name)
		}
	}
	return nil
}

// proof is the MAC one side sends: role is "dial" or "accept".
func proof(key []byte, role string, dialer, accepter hello, ekm []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(role))
	m.Write([]byte{byte(len(dialer.name))})
	m.Write([]byte(dialer.name))
	m.Write([]byte{byte(len(accepter.name))})
	m.Write([]byte(accepter.name))
	m.Write(dialer.nonce[:])
	m.Write(accepter.nonce[:])
	m.Write(ekm)
	return m.Sum(nil)
}

// dialHandshake runs the dialer's side over rw: self is this node's name,
// want the node it means to reach, ekm the TLS session's keying material.
func dialHandshake(rw io.ReadWriter, key []byte, self, want string, ekm []byte) error {
	d, err := newHello(self)
	if err != nil {
		return err
	}
	if _, err := rw.Write(d.append(nil)); err != nil {
		return fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	a, err := readHello(rw)
	if err != nil {
		return err
	}
	if a.name != want {
		return fmt.Errorf("%w: reached node %q, not %q", ErrHandshake, a.name, want)
	}
	var mac [macSize]byte
	if _, err := io.ReadFull(rw, mac[:]); err != nil {
		return fmt.Errorf("%w: reading proof: %w", ErrHandshake, err)
	}
	if !hmac.Equal(mac[:], proof(key, "accept", d, a, ekm)) {
		return fmt.Errorf("%w: node %q", ErrAuth, a.name)
	}
	if _, err := rw.Write(proof(key, "dial", d, a, ekm)); err != nil {
		return fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	var ok [1]byte
	if _, err := io.ReadFull(rw, ok[:]); err != nil {
		return fmt.Errorf("%w: node %q refused this node's proof (a different cluster secret?): %w", ErrAuth, a.name, err)
	}
	if ok[0] != handshakeOK {
		return fmt.Errorf("%w: node %q answered %d", ErrHandshake, a.name, ok[0])
	}
	return nil
}

// acceptHandshake runs the accepting side over rw and returns the
// dialer's name.
func acceptHandshake(rw io.ReadWriter, key []byte, self string, ekm []byte) (string, error) {
	a, err := newHello(self)
	if err != nil {
		return "", err
	}
	out := a.append(nil)
	d, err := readHello(rw)
	if err != nil {
		if errors.Is(err, errOtherVersion) {
			// Say which version this node speaks, then hang up.
			_, _ = rw.Write(out)
		}
		return "", err
	}
	if d.name == self {
		return "", fmt.Errorf("%w: the dialer claims this node's own name %q", ErrHandshake, self)
	}
	out = append(out, proof(key, "accept", d, a, ekm)...)
	if _, err := rw.Write(out); err != nil {
		return "", fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	var mac [macSize]byte
	if _, err := io.ReadFull(rw, mac[:]); err != nil {
		return "", fmt.Errorf("%w: reading proof of %q: %w", ErrHandshake, d.name, err)
	}
	if !hmac.Equal(mac[:], proof(key, "dial", d, a, ekm)) {
		return "", fmt.Errorf("%w: node %q", ErrAuth, d.name)
	}
	if _, err := rw.Write([]byte{handshakeOK}); err != nil {
		return "", fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	return d.name, nil
}
