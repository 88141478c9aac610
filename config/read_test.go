package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/internal/readfile"
)

// Nothing under /proc, /sys or /dev is read, wherever a symlink points: a
// symlink to /proc/kmsg (regular per stat, a read that blocks) in a
// watched directory wedged every later reload.
func TestKernelFilesNotRead(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"conf/a.yaml": "namespace: a\nentries: [{name: x, kind: test.svc, source: \"file://status.lua\"}]\n",
	})
	for link, target := range map[string]string{"conf/kmsg.yaml": "/proc/kmsg", "conf/status.lua": "/proc/self/status"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	kinds, _ := kindtest.Kinds()
	var opened []string
	var mu sync.Mutex
	readfile.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		mu.Lock()
		opened = append(opened, name)
		mu.Unlock()
		return os.OpenFile(name, flag, perm)
	}
	t.Cleanup(func() { readfile.OpenFile = os.OpenFile })
	_, err := loadWithin(t, &Loader{Kinds: kinds}, filepath.Join(dir, "conf"))
	for _, want := range []string{
		"kmsg.yaml: cannot read: not read: a file of /proc, /sys or /dev (/proc/kmsg)",
		"a:x: source: source status.lua: not read: a file of /proc, /sys or /dev (/proc/",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in:\n%v", want, err)
		}
	}
	for _, p := range []string{"/proc/self/maps", "/sys/kernel/mm/transparent_hugepage/enabled", "/dev/null"} {
		if _, _, err := readfile.Regular(context.Background(), p, 1<<20, 0); !errors.Is(err, readfile.ErrKernelFile) {
			t.Errorf("%s: %v, want ErrKernelFile", p, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range opened {
		if strings.Contains(name, "kmsg") || strings.Contains(name, "status.lua") {
			t.Errorf("%s was opened", name)
		}
	}
}

// blockReads makes every read of a file block until the returned release
// is called (or the test ends): readfile.Block.
func blockReads(t *testing.T) (release func()) {
	release, restore := readfile.Block()
	t.Cleanup(restore)
	return release
}

// A read that does not finish within the Loader's ReadTimeout fails the
// load with an error naming the file; while it is still stuck, another
// load fails at once instead of blocking another goroutine; once it
// returns, loads read the file again.
func TestReadDeadline(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"c.yaml": "namespace: a\nentries: [{name: x, kind: test.def}]\n"})
	kinds, _ := kindtest.Kinds()
	l := &Loader{Kinds: kinds, ReadTimeout: 50 * time.Millisecond}
	release := blockReads(t)
	file := filepath.Join(dir, "c.yaml")
	_, err := loadWithin(t, l, file)
	if err == nil || !strings.Contains(err.Error(), file+": cannot read: the read did not finish in time") || !Transient(err) {
		t.Fatalf("a blocked read: %v (transient %v)", err, Transient(err))
	}
	start := time.Now()
	if _, err := loadWithin(t, l, file); err == nil || !strings.Contains(err.Error(), "an earlier read of it has not returned yet") {
		t.Fatalf("a second load while the first read is stuck: %v", err)
	}
	if d := time.Since(start); d > 40*time.Millisecond*10 {
		t.Fatalf("the second load waited %s", d)
	}
	release()
	waitUntil(t, "the stuck read returned", func() bool {
		_, stuck := readfile.Stuck.Load(file)
		return !stuck
	})
	if _, err := loadWithin(t, l, file); err != nil {
		t.Fatal(err)
	}
}
