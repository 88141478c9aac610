package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runner validate of a directory holding a symlink to /proc/kmsg (regular
// per stat, a read that blocks) hung; now it names the file at once.
func TestValidateKernelFileSymlink(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("namespace: app\nentries: [{name: pg, kind: pg.scope}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/kmsg", filepath.Join(dir, "kmsg.yaml")); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() { done <- cli([]string{"validate", dir}, &out, &errb, nil, nil) }()
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(errb.String(), "kmsg.yaml: cannot read: not read: a file of /proc, /sys or /dev (/proc/kmsg)") {
			t.Fatalf("exit %d:\n%s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runner validate hangs")
	}
}
