package config

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/internal/readfile"
)

// hungFS is the operating system's file system, except that a stat of
// statPath or the walk of walkRoot blocks until release, as on a hung NFS
// mount.
type hungFS struct {
	osFS
	statPath, walkRoot string
	gate               chan struct{}
	once               sync.Once
}

func newHungFS(t *testing.T, statPath, walkRoot string) *hungFS {
	h := &hungFS{statPath: statPath, walkRoot: walkRoot, gate: make(chan struct{})}
	t.Cleanup(func() {
		h.release()
		readfile.Running.Wait()
	})
	return h
}

func (h *hungFS) release() { h.once.Do(func() { close(h.gate) }) }

func (h *hungFS) Stat(name string) (fs.FileInfo, error) {
	if name == h.statPath {
		<-h.gate
	}
	return h.osFS.Stat(name)
}

func (h *hungFS) WalkDir(root string, fn fs.WalkDirFunc) error {
	if root == h.walkRoot {
		<-h.gate
	}
	return h.osFS.WalkDir(root, fn)
}

// TestHungStatAndWalk: the stats and the directory walk of a load run
// under the read deadline (Loader.ReadTimeout), as reads do. A stat or a
// walk that hangs, as on a hung NFS mount, fails that load with an error
// naming the path, retried later (Transient), instead of blocking the load
// (and with it every reload, and SIGTERM) for good; an abandoned load
// returns at once.
func TestHungStatAndWalk(t *testing.T) {
	kinds, _ := kindtest.Kinds()
	for _, tc := range []struct{ name, stat, walk, load string }{
		{name: "walk of a directory", walk: "conf", load: "conf"},
		{name: "stat of a directory", stat: "conf", load: "conf"},
		{name: "stat of a file", stat: "conf/c.yaml", load: "conf/c.yaml"},
		{name: "stat of a file found by the walk", stat: "conf/c.yaml", load: "conf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"conf/c.yaml": "namespace: a\nentries: [{name: x, kind: test.def}]\n"})
			abs := func(p string) string {
				if p == "" {
					return ""
				}
				return filepath.Join(dir, p)
			}
			hung := newHungFS(t, abs(tc.stat), abs(tc.walk))
			// Generous: the calls that do not hang (the walk before a hung
			// stat) must finish within it on a loaded machine (50 ms did not).
			l := &Loader{Kinds: kinds, ReadTimeout: time.Second, fsys: hung}
			_, err := loadWithin(t, l, abs(tc.load))
			stuck := abs(tc.stat + tc.walk)
			if err == nil || !strings.Contains(err.Error(), stuck) || !strings.Contains(err.Error(), "did not finish in time") || !Transient(err) {
				t.Fatalf("a hung call: %v (transient %v)", err, Transient(err))
			}
			hung.release()
			waitUntil(t, "the hung call returned", func() bool {
				_, stuck := readfile.Stuck.Load(stuck)
				return !stuck
			})
			if _, err := loadWithin(t, l, abs(tc.load)); err != nil {
				t.Fatal(err)
			}
		})
	}

	// The watcher abandons a load by its context (Watcher.Close, SIGTERM):
	// a hung walk does not hold it, whatever the deadline.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"c.yaml": "namespace: a\nentries: [{name: x, kind: test.def}]\n"})
	hung := newHungFS(t, "", dir)
	l := &Loader{Kinds: kinds, ReadTimeout: time.Hour, fsys: hung}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := l.LoadContext(ctx, dir)
		done <- err
	}()
	time.AfterFunc(50*time.Millisecond, cancel)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("an abandoned load: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an abandoned load waited for the hung walk")
	}
}
