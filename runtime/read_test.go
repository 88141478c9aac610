package runtime

import (
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
