package runtime_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/node"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

// realKinds registers the runner's kinds (node.DefaultKinds, what the
// runner runs), so the scale benchmarks pay for real decoding and Lua
// compilation.
func realKinds() *registry.Registry { return node.DefaultKinds(io.Discard) }

const scaleSources = 10

// scaleFile is one file of a generated configuration: 100 entries in the
// namespace of the file, in blocks of ten: six process.lua definitions
// sharing a handful of sources, a pool, a supervisor, a partition and a
// pg.scope. rev changes the pools' sizes, so an edit is a real change.
func scaleFile(f, rev int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "namespace: ns%d\nentries:\n", f)
	for blk := range 10 {
		for i := range 6 {
			fmt.Fprintf(&b, "  - name: w%d_%d\n    kind: process.lua\n    source: file://lua/s%d.lua\n    mailbox_size: 100\n    args: [%d, \"x\"]\n",
				blk, i, (f+blk+i)%scaleSources, i)
		}
		fmt.Fprintf(&b, "  - name: pool%d\n    kind: router.pool\n    routee: w%d_0\n    size: %d\n    strategy: round_robin\n", blk, blk, 2+rev%3)
		fmt.Fprintf(&b, "  - name: sup%d\n    kind: supervisor\n    strategy: one_for_one\n    max_restarts: 5\n    restart_window: 10s\n    children:\n", blk)
		fmt.Fprintf(&b, "      - {id: a, process: w%d_1, restart: permanent}\n      - {id: b, process: w%d_2, shutdown: 2s}\n", blk, blk)
		fmt.Fprintf(&b, "  - name: part%d\n    kind: supervisor.partition\n    process: w%d_3\n    partitions: 4\n", blk, blk)
		fmt.Fprintf(&b, "  - name: pg%d\n    kind: pg.scope\n    max_groups: 100\n    lifecycle:\n      restart: {initial_delay: 50ms, max_attempts: 3}\n", blk)
	}
	return b.String()
}

// writeScaleConfig writes a configuration of n entries (n a multiple of
// 100) to a new directory and returns it.
func writeScaleConfig(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "lua"), 0o755); err != nil {
		tb.Fatal(err)
	}
	for i := range scaleSources {
		src := fmt.Sprintf("-- module %d\nlocal M = {}\nfunction M.main(n, s)\n  local t = {}\n  for i = 1, n do t[i] = s .. i end\n  return table.concat(t, \",\")\nend\nreturn M\n", i)
		if err := os.WriteFile(filepath.Join(dir, "lua", fmt.Sprintf("s%d.lua", i)), []byte(src), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for f := range n / 100 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.yaml", f)), []byte(scaleFile(f, 0)), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// peakHeap samples the heap in use while it runs, so a benchmark can
// report the high-water mark of what it does rather than what it keeps.
type peakHeap struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func startPeakHeap() *peakHeap {
	p := &peakHeap{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(samples)
			if v := samples[0].Value.Uint64(); v > p.peak.Load() {
				p.peak.Store(v)
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peakHeap) Stop() uint64 {
	close(p.stop)
	<-p.done
	return p.peak.Load()
}

// BenchmarkLoad50k loads and validates a 50,000-entry configuration of
// 500 files whose process.lua entries share ten sources. Target: at most
// 2 s and 300 MB per load.
func BenchmarkLoad50k(b *testing.B) {
	dir := writeScaleConfig(b, 50_000)
	kinds := realKinds()
	goruntime.GC()
	var ms0, ms1 goruntime.MemStats
	goruntime.ReadMemStats(&ms0)
	peak := startPeakHeap()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		// A new Loader each time: this is a cold load, as `runner
		// validate` and start-up do it.
		cfg, err := (&config.Loader{Kinds: kinds}).Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		if len(cfg.Entries) != 50_000 {
			b.Fatalf("%d entries", len(cfg.Entries))
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	p := peak.Stop()
	goruntime.ReadMemStats(&ms1)
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/load")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/(1<<20), "MB-allocated/load")
	b.ReportMetric(float64(p)/(1<<20), "MB-peak-heap")
}

// BenchmarkReloadOneFileOf20k measures a save of one file of a running
// 20,000-entry configuration (200 files) until the change is applied:
// reading what changed, validating the whole configuration and applying
// the diff. The watcher's debounce (100 ms by default) comes on top.
// Target: at most 200 ms.
func BenchmarkReloadOneFileOf20k(b *testing.B) {
	dir := writeScaleConfig(b, 20_000)
	kinds := realKinds()
	loader := &config.Loader{Kinds: kinds}
	cfg, err := loader.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	node := process.NewNode(process.Options{Name: "bench", Logger: slog.New(slog.DiscardHandler)})
	rt := runtime.NewRuntime(runtime.RuntimeOptions{Node: node, Kinds: kinds, Logger: slog.New(slog.DiscardHandler)})
	defer rt.Stop(context.Background())
	if err := rt.Start(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	target := filepath.Join(dir, "f0007.yaml")
	rev := 0
	b.ResetTimer()
	var total time.Duration
	for b.Loop() {
		rev++
		start := time.Now()
		tmp := target + ".tmp"
		if err := os.WriteFile(tmp, []byte(scaleFile(7, rev)), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, target); err != nil {
			b.Fatal(err)
		}
		_, sum, err := rt.Reload(context.Background(), loader, dir)
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		if len(sum.Updated) == 0 || len(sum.Unchanged) < 19_000 {
			b.Fatalf("reload: %s", sum)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/save-to-apply")
}

// liveFile is a small file of running entries that the heap test edits on
// every reload, together with the Lua source its routees run.
func liveFile(rev int) string {
	return fmt.Sprintf(`namespace: live
entries:
  - {name: w, kind: process.lua, source: "file://lua/edit.lua"}
  - {name: pool, kind: router.pool, routee: w, size: %d, lifecycle: {auto_start: true}}
  - {name: pg, kind: pg.scope, max_groups: %d, lifecycle: {auto_start: true}}
`, 1+rev%3, 100+rev)
}

func liveSource(rev int) string {
	return fmt.Sprintf(`-- revision %d
return {main = function()
  local inbox = process.inbox()
  while true do
    local m = inbox:receive()
    if m then m:reply(%d) end
  end
end}
`, rev, rev)
}

// 200 reloads of a 1,000-entry configuration, each editing a file and a
// Lua source, leave the live heap where it was: nothing keeps old
// configurations, old sources or what was compiled from them. The margin
// (a tenth of the heap, plus 4 MB) is what bounds the leak a reload may
// have, not the size of the configuration: the whole live heap is about
// 2 MB, so one old configuration (a thousand entries) kept per reload
// passes the margin within a few dozen reloads. (5,000 entries made each
// reload cost five times as much for no more sensitivity: 85 s under
// -race on a busy machine.)
func TestReloadHeapFlat(t *testing.T) {
	dir := writeScaleConfig(t, 1_000)
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p+".tmp", []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
	}
	write("live.yaml", liveFile(0))
	write("lua/edit.lua", liveSource(0))
	kinds := realKinds()
	loader := &config.Loader{Kinds: kinds}
	cfg, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	node := process.NewNode(process.Options{Name: "heap", Logger: log})
	rt := runtime.NewRuntime(runtime.RuntimeOptions{Node: node, Kinds: kinds, Logger: log})
	defer rt.Stop(context.Background())
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	live := func() uint64 {
		goruntime.GC()
		var ms goruntime.MemStats
		goruntime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	const reloads, warmup, every = 200, 20, 10
	var base, worst uint64
	for i := 1; i <= reloads; i++ {
		write("live.yaml", liveFile(i))
		write("lua/edit.lua", liveSource(i))
		_, sum, err := rt.Reload(context.Background(), loader, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Updated) == 0 || len(sum.Failed) > 0 {
			t.Fatalf("reload %d: %s, failed %v", i, sum, sum.Failed)
		}
		switch {
		case i == warmup:
			base = live()
		case i > warmup && i%every == 0:
			worst = max(worst, live())
		}
	}
	grew := int64(worst) - int64(base)
	t.Logf("live heap after %d reloads: %.1f MB; at most %.1f MB after %d more (%+.1f MB)",
		warmup, float64(base)/(1<<20), float64(worst)/(1<<20), reloads-warmup, float64(grew)/(1<<20))
	if margin := int64(base/10) + 4<<20; grew > margin {
		t.Fatalf("the live heap grew by %.1f MB over %d reloads (margin %.1f MB)", float64(grew)/(1<<20), reloads-warmup, float64(margin)/(1<<20))
	}
}
