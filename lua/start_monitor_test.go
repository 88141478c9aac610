package lua

import (
	"context"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// exitCounter spawns a process that counts the EXITs it got; ask
// returns how many came from pid so far (the zero PID: from any).
func exitCounter(t *testing.T, n *process.Node) (process.PID, func(pid process.PID) int) {
	t.Helper()
	type ask struct {
		pid   process.PID
		reply chan int
	}
	seen := map[process.PID]int{}
	w, err := n.SpawnFunc(func(p *process.Proc) (any, error) {
		for {
			m, err := p.Receive(p.Context())
			if err != nil {
				return nil, nil
			}
			for {
				e, ok := p.TryEvent()
				if !ok {
					break
				}
				if e.Kind == process.EventExit {
					seen[e.From]++
				}
			}
			if a, ok := m.Payload.(ask); ok {
				total := 0
				for _, c := range seen {
					total += c
				}
				if a.pid.IsZero() {
					a.reply <- total
				} else {
					a.reply <- seen[a.pid]
				}
			}
		}
	}, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Kill(w) })
	return w, func(pid process.PID) int {
		r := make(chan int, 1)
		if err := n.Send(w, process.Message{Topic: "ask", Payload: ask{pid, r}}); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-r:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("watcher did not answer")
			return 0
		}
	}
}

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
	w, exits := exitCounter(t, node)
	host := h.Kind.(*Host)

	t.Run("init raises", func(t *testing.T) {
		e := h.Entry("a10raise", `return { init = function() error("init fails on purpose") end, main = function() end }`)
		_, err := host.Start(context.Background(), h.Env, e, registry.StartOptions{MonitorBy: w})
		if err == nil {
			t.Fatal("start succeeded")
		}
		if n := exits(process.PID{}); n != 0 {
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
		if n := exits(process.PID{}); n != 0 {
			t.Errorf("the monitor of a start that timed out got %d EXIT(s) (held by the root's earlyExits)", n)
		}
	})
}
