package http

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/readfile"
)

// The certificate and key are read as configuration files are: never from
// /proc, /sys or /dev (a read there can block or never end), at most
// maxTLSFile bytes, under the read deadline. Before, tls.LoadX509KeyPair
// read any path whole, /dev/zero included.
func TestKeyPairIsReadAsAConfigurationFile(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.pem")
	if err := os.WriteFile(big, make([]byte, maxTLSFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		cert, key string
		want      error
	}{
		{"kernel file", "/dev/zero", big, readfile.ErrKernelFile},
		{"too large", big, big, readfile.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readKeyPair(TLSSpec{CertFile: tc.cert, KeyFile: tc.key})
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

// A certificate and a key that do not belong together fail with an error
// that names both files, with one "tls:" (it was "tls: tls: private key
// does not match public key", naming neither).
func TestMismatchedKeyPairNamesTheFiles(t *testing.T) {
	dir := t.TempDir()
	pemOf := func(name string) *ecdsa.PrivateKey {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		kb, _ := x509.MarshalECPrivateKey(key)
		os.WriteFile(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
		os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
		return key
	}
	pemOf("a")
	pemOf("b")
	cert, key := filepath.Join(dir, "a.crt"), filepath.Join(dir, "b.key")
	_, err := readKeyPair(TLSSpec{CertFile: cert, KeyFile: key})
	want := "tls: cert_file " + cert + ", key_file " + key + ": private key does not match public key"
	if err == nil || err.Error() != want || strings.Count(err.Error(), "tls:") != 1 {
		t.Fatalf("error %v, want %s", err, want)
	}
}
