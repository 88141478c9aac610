package runtime

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/readfile"
)

// blockReads makes every read of a file block until the returned release
// is called (or the test ends): readfile.Block.
func blockReads(t *testing.T) (release func()) {
	release, restore := readfile.Block()
	t.Cleanup(restore)
	return release
}

// Closing the watcher (SIGTERM) while a reload is blocked in a read
// returns at once: the read is abandoned with the reload, whatever its
// deadline. Before, the node was still alive 46 s after SIGTERM.
func TestWatchCloseDuringABlockedRead(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	r.loader.ReadTimeout = time.Hour
	blockReads(t)
	w, err := Watch(WatchOptions{Runtime: r.rt, Loader: r.loader, Paths: []string{r.dir}, Config: r.rt.Config(),
		Logger: r.rt.log, Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	r.write("c.yaml", watchBase+"  - {name: y, kind: test.svc}\n")
	w.Trigger()
	waitUntil(t, "the reload under way", func() bool { _, ok := r.rt.ReloadInProgress(); return ok })
	closed := make(chan struct{})
	go func() { w.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for a blocked read")
	}
}

// A stat of a watched path that does not return (a hung NFS or FUSE
// mount) is abandoned at the loader's read deadline: Watch starts, says
// which path it cannot watch, and Close returns. Before, Watch never
// returned (its stat blocked in the kernel), nor would a watcher's Close
// whose goroutine was stuck in one.
func TestWatchAbandonsAHungStat(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	r.loader.ReadTimeout = 50 * time.Millisecond
	gate := make(chan struct{})
	hung := filepath.Join(r.dir, "lua")
	watchStat = func(p string) (fs.FileInfo, error) {
		if p == hung {
			<-gate
			return nil, fs.ErrNotExist
		}
		return os.Stat(p)
	}
	// Before the directory goes: the abandoned stat returns, and the
	// watcher's goroutine for it ends (readfile.Running).
	t.Cleanup(func() { close(gate); readfile.Running.Wait(); watchStat = os.Stat })
	started := make(chan *Watcher, 1)
	go func() {
		w, err := Watch(WatchOptions{Runtime: r.rt, Loader: r.loader, Paths: []string{r.dir, hung}, Config: r.rt.Config(),
			Logger: r.rt.log})
		if err != nil {
			t.Error(err)
		}
		started <- w
	}()
	var w *Watcher
	select {
	case w = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("Watch waits for a hung stat")
	}
	if w == nil {
		return
	}
	if logs := r.logs.String(); !strings.Contains(logs, "cannot watch path") || !strings.Contains(logs, hung) {
		t.Errorf("no warning naming %s: %s", hung, logs)
	}
	closed := make(chan struct{})
	go func() { w.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for a hung stat")
	}
}
