package cluster

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/proctor-run/proctor/internal/readfile"
)

// MinSecret is the shortest secret accepted, in bytes.
const MinSecret = 16

// maxSecretFile bounds what ReadSecretFile reads: a secret is a line of
// text, not a file of any size.
const maxSecretFile = 64 << 10

// Keys are what one shared secret yields: memberlist's gossip key and the
// transport's handshake key. Each is derived from the secret with HKDF
// (SHA-256) under its own label, so neither reveals the other and any text
// of MinSecret bytes or more serves as a secret.
type Keys struct {
	// Gossip is memberlist's AES-256 key: gossip and its push/pull state
	// syncs are encrypted and authenticated with it.
	Gossip []byte
	// Handshake is the transport's HMAC-SHA-256 key: both ends of a
	// connection prove they hold it before any frame is exchanged.
	Handshake []byte
}

// Labels of the derived keys. Changing one changes the keys: every node of
// a cluster must run the same.
const (
	gossipKeyInfo    = "proctor cluster gossip key v1"
	handshakeKeyInfo = "proctor cluster transport handshake key v1"
)

// DeriveKeys derives the cluster's keys from secret (at least MinSecret
// bytes).
func DeriveKeys(secret []byte) (Keys, error) {
	if len(secret) < MinSecret {
		return Keys{}, fmt.Errorf("cluster secret: %d bytes; want at least %d", len(secret), MinSecret)
	}
	g, err := hkdf.Key(sha256.New, secret, nil, gossipKeyInfo, 32)
	if err != nil {
		return Keys{}, fmt.Errorf("cluster secret: %w", err)
	}
	h, err := hkdf.Key(sha256.New, secret, nil, handshakeKeyInfo, 32)
	if err != nil {
		return Keys{}, fmt.Errorf("cluster secret: %w", err)
	}
	return Keys{Gossip: g, Handshake: h}, nil
}

// ReadSecretFile reads a secret as `--cluster-secret-file` takes it: the
// file holds it as text, surrounding whitespace trimmed, at least MinSecret
// bytes.
func ReadSecretFile(path string) ([]byte, error) {
	// As a configuration file is read: nothing under /proc, /sys or /dev,
	// and a read that does not finish in readfile.DefaultReadTimeout (a
	// hung NFS mount) fails start-up instead of blocking it.
	b, _, err := readfile.Regular(context.Background(), path, maxSecretFile, 0)
	if errors.Is(err, readfile.ErrTooLarge) {
		return nil, fmt.Errorf("%s: larger than %d bytes: not a secret", path, maxSecretFile)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := bytes.TrimSpace(b)
	if len(s) < MinSecret {
		return nil, fmt.Errorf("%s: the secret is %d bytes after trimming whitespace; want at least %d (e.g. 32 hex characters)", path, len(s), MinSecret)
	}
	return bytes.Clone(s), nil
}
