package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/cluster"
	"github.com/proctor-run/proctor/internal/readfile"
)

// TestCommandLineFilesAreReadWithADeadline: the token file, a payload file
// and the cluster secret file are read as configuration files are
// (readfile.Regular). Each was read with os.ReadFile after a stat: a
// symlink to /proc/kmsg (regular and empty to stat) blocked start-up for
// good, and so did a hung NFS mount. Now nothing under /proc, /sys or /dev
// is read, and a read that does not finish within fileReadTimeout fails,
// naming the file.
func TestCommandLineFilesAreReadWithADeadline(t *testing.T) {
	dir := t.TempDir()
	kernel := filepath.Join(dir, "kernel")
	if err := os.Symlink("/proc/self/status", kernel); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "token")
	if err := os.WriteFile(good, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reads := map[string]func(path string) error{
		"token":   func(p string) error { _, err := readToken(p); return err },
		"payload": func(p string) error { _, err := readPayload("@" + p); return err },
		"secret":  func(p string) error { _, err := cluster.ReadSecretFile(p); return err },
	}
	for name, read := range reads {
		if err := read(good); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		err := read(kernel)
		if !errors.Is(err, readfile.ErrKernelFile) || !strings.Contains(err.Error(), kernel) {
			t.Errorf("%s through a symlink into /proc: %v", name, err)
		}
	}

	defer func(d time.Duration) { fileReadTimeout = d }(fileReadTimeout)
	fileReadTimeout = 100 * time.Millisecond
	release, restore := readfile.Block()
	defer restore()
	for _, name := range []string{"token", "payload"} {
		// A file of its own for each: a path whose read is still stuck
		// fails at once (readfile.Stuck), which is not what this checks.
		p := filepath.Join(dir, name+"-blocked")
		if err := os.WriteFile(p, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- reads[name](p) }()
		select {
		case err := <-done:
			if !errors.Is(err, readfile.ErrReadTimeout) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: a blocked read gave %v", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: a blocked read blocked the caller", name)
		}
	}
	release()
}
