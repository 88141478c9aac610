package runtime

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/registry"
)

// Reload waits for the reload it asked for: one asked while another runs
// gets the outcome of the reload that follows (which reads the files
// saved meanwhile), not the running one's; once the watcher is closed,
// ErrWatcherClosed.
func TestWatcherReloadWaitsForItsOwnReload(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": watchBase, "lua/w.lua": "return 1"})
	k, _ := r.loader.Kinds.Kind("test.svc")
	svc := k.(*kindtest.SvcKind)
	w, err := Watch(WatchOptions{Runtime: r.rt, Loader: r.loader, Paths: []string{r.dir}, Config: r.rt.Config(), Logger: r.rt.log, Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	// Every start now waits until the test takes its ID.
	svc.Order = make(chan registry.ID)
	type outcome struct {
		sum ReloadSummary
		err error
	}
	reload := func() <-chan outcome {
		c := make(chan outcome, 1)
		go func() {
			sum, err := w.Reload(context.Background())
			c <- outcome{sum, err}
		}()
		return c
	}
	r.write("c.yaml", watchBase+"  - {name: y, kind: test.svc, lifecycle: {auto_start: true}}\n")
	first := reload()
	// Under way means past its load, starting a:y: a reload marks itself
	// under way before it reads the files, and one that read the next
	// write half done would end at once, before the second is asked for.
	waitUntil(t, "the first reload to be starting a:y", func() bool {
		in, ok := r.rt.Info("a:y")
		_, busy := r.rt.ReloadInProgress()
		return ok && busy && in.Status == StatusStarting
	})
	r.write("c.yaml", watchBase+"  - {name: y, kind: test.svc, lifecycle: {auto_start: true}}\n  - {name: z, kind: test.svc, lifecycle: {auto_start: true}}\n")
	second := reload()
	waitUntil(t, "the second reload to be queued", func() bool { return strings.Contains(r.logs.String(), "this one follows it") })
	for _, want := range []struct {
		id    registry.ID
		reply <-chan outcome
	}{{"a:y", first}, {"a:z", second}} {
		if id := <-svc.Order; id != want.id {
			t.Fatalf("started %s, want %s", id, want.id)
		}
		select {
		case out := <-want.reply:
			if out.err != nil || !slices.Equal(out.sum.Added, []registry.ID{want.id}) {
				t.Fatalf("the reload that started %s: %v, %v", want.id, out.sum, out.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no outcome for the reload that started %s", want.id)
		}
	}
	w.Close()
	if _, err := w.Reload(context.Background()); !errors.Is(err, ErrWatcherClosed) {
		t.Fatalf("Reload after Close: %v, want ErrWatcherClosed", err)
	}
}
