package lua

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// upgradeBenchSource is a process that waits for its events and upgrades
// when offered, handing over a counter; version names its code.
func upgradeBenchSource(version string) string {
	return `return {
  upgrade = function(n) return n + 1 end,
  main = function(n)
    n = n or 0
    local events = process.events()
    while true do
      local ev = events:receive()
      if ev.kind == "UPGRADE" then process.upgrade(n) end
    end
  end,
} -- ` + version
}

// BenchmarkLuaUpgrade: the time from the UPGRADE event to the new main
// running (Upgrade returns once the new main waits), for one process
// (ns/op, target 50 µs), and for 10,000 processes upgrading at once (the
// total, s/10k, target 2 s on 2 cores). Each iteration moves the
// processes to the other of two definitions.
func BenchmarkLuaUpgrade(b *testing.B) {
	b.Run("one", func(b *testing.B) {
		h := newHarness(b)
		host := h.Kind.(*Host)
		defs := upgradeDefs(h)
		pid := h.Spawn(defs[0])
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if res, err := host.Upgrade(context.Background(), h.Env, pid, defs[(i+1)%2]); res != registry.UpgradeOK {
				b.Fatalf("upgrade %d: %q, %v", i, res, err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/upgrade")
	})
	b.Run("10k", func(b *testing.B) {
		const n = 10_000
		h := newHarness(b)
		host := h.Kind.(*Host)
		defs := upgradeDefs(h)
		pids := make([]process.PID, n)
		for i := range pids {
			pids[i] = h.Spawn(defs[0])
		}
		b.ResetTimer()
		var total time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for _, pid := range pids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if res, err := host.Upgrade(context.Background(), h.Env, pid, defs[(i+1)%2]); res != registry.UpgradeOK {
						errs <- err
					}
				}()
			}
			wg.Wait()
			total += time.Since(start)
			close(errs)
			for err := range errs {
				b.Fatalf("an upgrade failed: %v", err)
			}
		}
		b.StopTimer()
		b.ReportMetric(total.Seconds()/float64(b.N), "s/10k")
	})
}

func upgradeDefs(h *harness) [2]*registry.Entry {
	var defs [2]*registry.Entry
	for i, v := range []string{"v1", "v2"} {
		defs[i] = h.Entry("up_"+v, upgradeBenchSource(v), "on_reload: upgrade")
		defs[i].Digest = v
	}
	return defs
}
