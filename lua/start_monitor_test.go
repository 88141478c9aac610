package lua

import (
	"context"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/registry"
)

// a Lua start that fails after the spawn must drop the spawner's
// monitor before its process exits (registry.StartOptions), or the root
// holds an EXIT for an instance it is never given (earlyExits). Two
// ways: init raises, and init outlives the start timeout. (A process
// killed in its init by the runtime's abandonStart has its monitor
// dropped there, before the kill; one killed by anybody else exits as
// any process does.)
func TestFailedLuaStartLeavesNoExitForItsMonitor(t *testing.T) {
	h := newHarness(t)
	node := h.Env.Node
	w, events := kindtest.EventWatcher(t, node)
	host := h.Kind.(*Host)

	t.Run("init raises", func(t *testing.T) {
		e := h.Entry("a10raise", `return { init = function() error("init fails on purpose") end, main = function() end }`)
		_, err := host.Start(context.Background(), h.Env, e, registry.StartOptions{MonitorBy: w})
		if err == nil {
			t.Fatal("start succeeded")
		}
		if n := len(events()); n != 0 {
			t.Errorf("the monitor of a start that failed got %d EXIT(s) (held by the root's earlyExits)", n)
		}
	})
	t.Run("init times out", func(t *testing.T) {
		e := h.Entry("a10slow", `return { init = function() process.inbox():receive() end, main = function() end }`)
		e.Lifecycle.StartTimeout = 100 * time.Millisecond
		_, err := host.Start(context.Background(), h.Env, e, registry.StartOptions{MonitorBy: w})
		if err == nil {
			t.Fatal("start succeeded")
		}
		// The killed process may still be tearing down.
		if pid, ok := node.Whereis(string(e.ID)); ok {
			if done, _, ok := node.Done(pid); ok {
				<-done
			}
		}
		if n := len(events()); n != 0 {
			t.Errorf("the monitor of a start that timed out got %d EXIT(s) (held by the root's earlyExits)", n)
		}
	})
}
