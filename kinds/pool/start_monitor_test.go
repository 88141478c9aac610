package pool

import (
	"context"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// a pool whose start fails after its spawn (a routee cannot
// spawn: its init returns the error and the process ends) must drop the
// spawner's monitor (registry.StartOptions.MonitorBy, the root's) before
// its process exits, or the root holds that EXIT for an instance it is
// never given (earlyExits).
func TestFailedPoolStartLeavesNoExitForItsMonitor(t *testing.T) {
	h := newHarness(t)
	h.routee("app:worker", func() process.Behavior { return &replica{} })
	h.reg.failSpawn.Store(true)
	w, events := kindtest.EventWatcher(t, h.node)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Start(ctx, h.env, "app:pool", &Spec{Routee: "app:worker", Size: 2, Strategy: RoundRobin, Timeout: time.Second}, registry.StartOptions{MonitorBy: w}); err == nil {
		t.Fatal("the pool started")
	}
	eventually(t, "only the watcher left", func() bool { return h.node.Count() == 1 })
	for _, e := range events() {
		t.Errorf("the monitor of a pool whose start failed got an EXIT of %s (%v): the root would hold it in earlyExits", e.From, e.Exit.Err)
	}
}
