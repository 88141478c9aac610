package lua

import (
	"context"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// benchprobe is a test-only module: ready() counts processes that reached
// their idle point, and start()/stop() time one operation in nanoseconds.
var (
	probeReady atomic.Int64
	probeMu    sync.Mutex
	probeLat   []time.Duration
)

// probeStarts is the start of the operation being timed (one process
// times at a time).
var probeStarts []time.Time

var benchprobeModule = Module{
	Name: "benchprobe",
	Doc:  "Test only: counts idle processes and times operations.",
	Funcs: []Func{
		{Name: "ready", Fn: func(L *lua.LState) int { probeReady.Add(1); return 0 }, Doc: "Counts a process that reached its idle point."},
		{Name: "start", Fn: func(L *lua.LState) int { probeStarts = append(probeStarts[:0], time.Now()); return 0 }, Doc: "Starts timing."},
		{Name: "stop", Fn: func(L *lua.LState) int {
			d := time.Since(probeStarts[0])
			probeMu.Lock()
			probeLat = append(probeLat, d)
			probeMu.Unlock()
			return 0
		}, Doc: "Records the time since start."},
	},
}

func BenchmarkLuaTell(b *testing.B) {
	h := newHarness(b)
	recv := h.Entry("recv", `
return { main = function(n)
  local inbox = process.inbox()
  for i = 1, n do inbox:receive() end
  return n
end }`)
	send := h.Entry("send", `
return { main = function(dest, n)
  local send = process.send
  for i = 1, n do
    while not send(dest, "m", i) do end
  end
end }`)
	n := b.N
	b.ResetTimer()
	start := time.Now()
	r := h.Spawn(recv, float64(n))
	h.Spawn(send, r.String(), float64(n))
	ex := h.Wait(r, 5*time.Minute)
	el := time.Since(start)
	b.StopTimer()
	if ex.Err != nil {
		b.Fatal(ex.Err)
	}
	b.ReportMetric(float64(n)/el.Seconds(), "msgs/s")
}

func BenchmarkLuaAsk(b *testing.B) {
	h := newHarness(b)
	srv := h.Entry("srv", `
return { main = function()
  local inbox = process.inbox()
  while true do
    local m = inbox:receive()
    m:reply(m:payload())
  end
end }`)
	asker := h.Entry("asker", `
local probe = require("benchprobe")
return { main = function(dest, n)
  local ask, start, stop = process.ask, probe.start, probe.stop
  for i = 1, n do
    start()
    local v = ask(dest, "q", i)
    stop()
    if v ~= i then error("bad reply") end
  end
end }`)
	probeMu.Lock()
	probeLat = make([]time.Duration, 0, b.N)
	probeMu.Unlock()
	s := h.Spawn(srv)
	b.ResetTimer()
	ex := h.Run(asker, s.String(), float64(b.N))
	b.StopTimer()
	if ex.Err != nil {
		b.Fatal(ex.Err)
	}
	_ = h.Node.Terminate(s)
	probeMu.Lock()
	lat := slices.Clone(probeLat)
	probeMu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

func BenchmarkLuaSpawn(b *testing.B) {
	h := newHarness(b)
	e := h.Entry("idle", `return { main = function(x) return x end }`)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := h.Kind.Spawn(h.Env, e, registry.SpawnOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for h.Node.Count() > 0 {
		time.Sleep(100 * time.Microsecond)
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "spawns/s")
}

// BenchmarkLuaIdleMemory spawns b.N processes that wait on their inbox
// (run it with -benchtime=100000x for the 100k figure) and reports the live
// heap per process after GC, while they are all alive.
func BenchmarkLuaIdleMemory(b *testing.B) {
	h := newHarness(b)
	e := h.Entry("idle", idleScript)
	n := b.N
	probeReady.Store(0)
	// The benchmark's own list of PIDs is not the processes' memory.
	pids := make([]process.PID, 0, n)
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		pid, err := h.Kind.Spawn(h.Env, e, registry.SpawnOptions{})
		if err != nil {
			b.Fatal(err)
		}
		pids = append(pids, pid)
	}
	waitIdle(h, pids)
	b.StopTimer()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	perProc := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
	b.ReportMetric(perProc, "B/process")
	// Goroutine stacks are not heap; reported apart so the total is visible.
	b.ReportMetric(float64(int64(after.StackInuse)-int64(before.StackInuse))/float64(n), "stack-B/process")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
	terminateAll(h, pids)
}

// idleScript is a process that reaches its idle point (the probe) and
// waits on its inbox.
const idleScript = `
local probe = require("benchprobe")
return { main = function()
  probe.ready()
  process.inbox():receive()
end }`

// waitIdle waits until every process of pids reached its idle point (the
// probe) and waits for mail.
func waitIdle(h *harness, pids []process.PID) {
	for probeReady.Load() < int64(len(pids)) {
		time.Sleep(time.Millisecond)
	}
	for _, pid := range pids {
		for !h.Node.Idle(pid) {
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// BenchmarkLuaMillion spawns a million Lua processes that wait on their
// inbox, all alive together, and reports how long they took to spawn and
// reach their idle point (spawn-s, and the CPU time that took, spawn-cpu-s)
// and the process's peak RSS from the start of the run to the idle point
// (peak-RSS-MB, Linux: the high-water mark is reset before each run, with
// /proc/self/clear_refs, after a collection has given the last run's memory
// back, so -count N measures each run alone), and the peak while the
// million are torn down at the end (teardown-peak-RSS-MB). It needs about
// 5 GB and runs only with -lua-million:
//
//	go test ./lua -run '^$' -bench LuaMillion -benchtime 1x -lua-million
func BenchmarkLuaMillion(b *testing.B) {
	if !testutil.LuaMillion() {
		b.Skip("a million processes: run with -lua-million")
	}
	const n = 1_000_000
	h := newHarness(b)
	e := h.Entry("idle", idleScript)
	probeReady.Store(0)
	var el, cpu time.Duration
	var pids []process.PID
	var peak int64
	for i := 0; i < b.N; i++ {
		pids = make([]process.PID, 0, n)
		runtime.GC()
		debug.FreeOSMemory()
		resetPeakRSS(b)
		cpu0 := cpuTime()
		start := time.Now()
		for j := 0; j < n; j++ {
			pid, err := h.Kind.Spawn(h.Env, e, registry.SpawnOptions{})
			if err != nil {
				b.Fatalf("process %d: %v", j, err)
			}
			pids = append(pids, pid)
		}
		waitIdle(h, pids)
		el = time.Since(start)
		cpu = cpuTime() - cpu0
		if hwm, err := peakRSS(); err != nil {
			b.Logf("peak RSS: %v", err)
		} else {
			peak = hwm
		}
		if i < b.N-1 {
			terminateAll(h, pids)
			probeReady.Store(0)
		}
	}
	b.StopTimer()
	b.ReportMetric(el.Seconds(), "spawn-s")
	// CPU time of the whole Go process (every thread: the spawner, the
	// processes, the collector) while they spawned: what a loaded machine
	// does not change as much as spawn-s.
	b.ReportMetric(cpu.Seconds(), "spawn-cpu-s")
	b.ReportMetric(float64(n)/el.Seconds(), "spawns/s")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
	if peak > 0 {
		b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
	}
	terminateAll(h, pids)
	if hwm, err := peakRSS(); err == nil {
		b.ReportMetric(float64(hwm)/(1<<20), "teardown-peak-RSS-MB")
	}
}

// resetPeakRSS resets the process's RSS high-water mark (VmHWM) to its
// RSS now: writing 5 to /proc/self/clear_refs (Linux 4.0 and later).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("peak RSS not reset: %v", err)
	}
}

// terminateAll stops pids and waits until the node has no process left.
func terminateAll(h *harness, pids []process.PID) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, pid := range pids {
		_ = h.Node.Terminate(pid)
	}
	for h.Node.Count() > 0 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
}

// cpuTime returns the CPU time (user and system) the Go process used so
// far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS returns the process's peak resident set (VmHWM) in bytes.
func peakRSS() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}
