package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/internal/readfile"
)

// TestCertFilesAreReadAsConfigurationFiles: the certificate, key and CA
// files go through readfile.Regular, as configuration files do; a CA
// symlinked into /proc (regular and empty to stat, a read that may block)
// was read with os.ReadFile.
func TestCertFilesAreReadAsConfigurationFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("not PEM"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.Symlink("/proc/self/status", ca); err != nil {
		t.Fatal(err)
	}
	o := TLSOptions{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"), CAFile: ca}
	_, _, err := readCertFiles(o)
	if !errors.Is(err, readfile.ErrKernelFile) || !strings.Contains(err.Error(), ca) {
		t.Fatalf("a CA symlinked into /proc: %v", err)
	}
}
