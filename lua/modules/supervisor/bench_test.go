package supervisor_test

import (
	"context"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/lua/internal/luatest"
	"github.com/proctor-run/proctor/process"
)

// BenchmarkLuaRestart: from a Lua child's crash (it raises) to its
// replacement — a fresh Lua state — answering an ask, under a one_for_one
// supervisor.
func BenchmarkLuaRestart(b *testing.B) {
	h := luatest.New(b, func(stdout io.Writer) luatest.Kind { return lua.NewKind(lua.Options{Stdout: stdout}) })
	h.Entry("worker", supWorker)
	s, err := supervisor.Start(context.Background(), h.Env, "test:sup", &supervisor.Spec{
		MaxRestarts: 1 << 30, RestartWindow: time.Millisecond,
		Children: []supervisor.ChildSpec{{ID: "w", Process: "test:worker", Args: []any{"w"}}},
	}, process.SpawnOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Stop(context.Background()) }()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		old := s.WhichChildren()[0].PID
		if err := h.Node.Send(old, process.Message{Topic: "crash"}); err != nil {
			b.Fatal(err)
		}
		var pid process.PID
		for {
			c := s.WhichChildren()[0]
			if c.Status == supervisor.StatusRunning && !c.PID.IsZero() && c.PID != old {
				pid = c.PID
				break
			}
			runtime.Gosched()
		}
		if _, _, err := h.Node.Ask(pid, process.Message{Topic: "ping"}, time.Second); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "ns/restart")
}
