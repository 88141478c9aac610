package http

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

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
