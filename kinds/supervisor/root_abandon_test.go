package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

// slowStartKind's second Start ignores its context and blocks until
// release is closed (a kind that does not honour its start timeout, which
// callStart abandons after start_timeout + startGrace); every other Start
// is rootTestKind's.
type slowStartKind struct {
	calls   *atomic.Int32
	release chan struct{}
}

func (slowStartKind) Name() string                 { return "crashtest.slow" }
func (slowStartKind) Decode(*registry.Decoder) any { return nil }

func (k slowStartKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	if k.calls.Add(1) == 2 {
		<-k.release
	}
	return rootTestKind{}.Start(ctx, env, e, opts)
}

// a root restart whose start is abandoned (the kind ignored its
// context) fails the attempt and schedules the next one. When the abandoned
// start's instance comes late, callStart still has the root Watch it; the
// root takes it for an instance the runtime started itself and drops the
// entry's pending restart and attempt count. Nobody restarts the entry
// then: it must still be restarted (or marked failed), not stay down.
func TestAbandonedRestartsLateInstanceKeepsThePendingRestart(t *testing.T) {
	k := slowStartKind{calls: &atomic.Int32{}, release: make(chan struct{})}
	kinds := registry.NewRegistry()
	kinds.Register(k)
	p := filepath.Join(t.TempDir(), "c.yaml")
	yaml := "namespace: a\nentries:\n  - {name: s, kind: crashtest.slow, lifecycle: {auto_start: true, start_timeout: 100ms, restart: {initial_delay: 3s, max_delay: 3s, max_attempts: 5}}}\n"
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := (&config.Loader{Kinds: kinds}).Load(p)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := rootStart(t, kinds, cfg, nil)
	released := false
	t.Cleanup(func() { // before rootStart's: a blocked Start holds the runtime's stop
		if !released {
			close(k.release)
		}
	})
	first := rootCrash(t, rt, "a:s", "crash")
	// The first restart (after 3 s) blocks in Start and is abandoned 1.1 s
	// later; the runtime records that error while the root schedules the
	// next attempt (3 s more).
	testutil.EventuallyWithin(t, 20*time.Second, "the restart abandoned", func() bool {
		info, _ := rt.Info("a:s")
		return info.Err != nil && strings.Contains(info.Err.Error(), "abandoned")
	})
	// The abandoned start's instance comes now, while the next restart is
	// pending.
	close(k.release)
	released = true
	testutil.EventuallyExplained(t, 20*time.Second, "a:s restarted after the abandoned start (or marked failed)", func() bool {
		info, _ := rt.Info("a:s")
		if info.Status == runtime.StatusFailed {
			return true
		}
		inst, ok := rt.Instance("a:s")
		return ok && info.Status == runtime.StatusRunning && inst.PID() != first && k.calls.Load() >= 3
	}, func() string {
		info, _ := rt.Info("a:s")
		return fmt.Sprintf("status %v, err %v, Start called %d times", info.Status, info.Err, k.calls.Load())
	})
}
