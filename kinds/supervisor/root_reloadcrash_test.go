package supervisor

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

// crashingStartKind is rootGoneKind (the instance has crashed by the time
// Start returns, monitored from its spawn) under its own name, counting
// its starts.
type crashingStartKind struct {
	name  string
	calls *atomic.Int32
}

func (k crashingStartKind) Name() string               { return k.name }
func (crashingStartKind) Decode(*registry.Decoder) any { return nil }
func (k crashingStartKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	k.calls.Add(1)
	return rootGoneKind{}.Start(ctx, env, e, opts)
}

// reloads that replace an entry again and again while its
// instances crash the moment they start (their EXITs beating their
// watches, the root's restarts racing the reloads). After the last
// reload the entry gets exactly its own budget: one start by the reload,
// max_attempts restarts, then failed with the instance's own error.
func TestReloadReplacesAnEntryWhileItCrashes(t *testing.T) {
	calls := &atomic.Int32{}
	kinds := registry.NewRegistry()
	kinds.Register(crashingStartKind{"crashtest.gone_a", calls})
	kinds.Register(crashingStartKind{"crashtest.gone_b", calls})
	conf := func(kind string) string {
		return fmt.Sprintf("namespace: a\nentries:\n  - {name: s, kind: %s, lifecycle: {auto_start: true, restart: {initial_delay: 1ms, max_delay: 5ms, max_attempts: 2}}}\n", kind)
	}
	a := newReloadRoot(t, kinds, conf("crashtest.gone_a"))
	rt := a.rt
	var before int32
	failed := func() bool {
		info, _ := rt.Info("a:s")
		return info.Status == runtime.StatusFailed
	}
	for i := range 30 {
		kind := "crashtest.gone_a"
		if i%2 == 0 {
			kind = "crashtest.gone_b"
		}
		a.reload(conf(kind))
	}
	// Then, with no restart of it pending, one more replacement: its
	// starts from here on are its own.
	testutil.EventuallyWithin(t, 20*time.Second, "a:s failed after the reloads", failed)
	before = calls.Load()
	a.reload(conf("crashtest.gone_b")) // the 30th reload left gone_a
	testutil.EventuallyExplained(t, 20*time.Second, "a:s failed after the last reload", func() bool {
		info, _ := rt.Info("a:s")
		return info.Status == runtime.StatusFailed
	}, func() string {
		info, _ := rt.Info("a:s")
		return fmt.Sprintf("status %v err %v, %d starts since the last reload", info.Status, info.Err, calls.Load()-before)
	})
	info, _ := rt.Info("a:s")
	if got := calls.Load() - before; got != 3 {
		t.Errorf("%d starts since the last reload began, want 3 (its own, then max_attempts 2); error %v", got, info.Err)
	}
	if msg := info.Err.Error(); !strings.Contains(msg, "gave up after 2 restart attempts: crashed at once") {
		t.Errorf("error %q", msg)
	}
}
