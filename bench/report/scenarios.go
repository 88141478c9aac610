package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// kind is what a figure measures, which says how it prints and which way
// is better.
type kind int

const (
	rate     kind = iota // per second; higher is better
	duration             // nanoseconds; lower is better
	size                 // bytes; lower is better
	count                // a number of things; lower is better
	level                // a mean that is not a whole count (CPUs busy); no better way
)

// scenario is one row of the report: a figure, the benchmark that measures
// it, and its target.
type scenario struct {
	figure string
	// dir is the module directory, relative to the repository root; pkg
	// the package in it, as go test takes it.
	dir, pkg string
	// bench is the benchmark's full name (with its sub-benchmark), peer the
	// peer's in the same run, if there is one.
	bench, peer string
	// units are the benchmark's reported units whose sum is the figure,
	// scaled by scale into the kind's base unit (1/s, ns or bytes).
	units []string
	scale float64
	kind  kind
	// benchtime is the -benchtime that keeps the benchmark stable and short.
	benchtime string
	// args are flags for the test binary (after -args), such as the
	// opt-in flag of a benchmark that is skipped without it.
	args []string
	// limit is the target (a floor for a rate, a ceiling otherwise); 0 for
	// none. ratio is the least ratio of the medians over the peer's, and
	// minRatio the least ratio of any one run over the peer's run beside it
	// (run i of one against run i of the other, from the same go test); 0
	// for none.
	limit, ratio, minRatio float64
	// spread, when set, makes the figure the spread of the runs rather
	// than their median: the farthest run from the median, as a fraction
	// of it, which must stay within spread.
	spread float64
	// slow scenarios are left out by -short.
	slow bool
}

// scenarios are the headline figures of every layer, in the order they
// print. Targets are issue 28's where it sets one (they must hold on any
// machine: the Go tell's is a ratio to protoactor-go in the same run, as
// absolute rates differ between processors), issue 15's, issue 26's (the
// HTTP echo's, ratios to plain net/http in the same run), and each
// package's documented ones.
var scenarios = []scenario{
	{figure: "Go tell", dir: "bench", pkg: ".", bench: "BenchmarkTell/proctor", peer: "BenchmarkTell/protoactor",
		units: []string{"msgs/s"}, scale: 1, kind: rate, benchtime: "1x", ratio: 2, minRatio: 1.5},
	// The physical limit: the same sender and receiver over a buffered
	// channel and over a minimal SPSC ring (bench/limit_test.go); the ratio
	// is our tell as a fraction of each.
	{figure: "Go tell vs a buffered channel", dir: "bench", pkg: ".", bench: "BenchmarkTell/proctor", peer: "BenchmarkTell/chan",
		units: []string{"msgs/s"}, scale: 1, kind: rate, benchtime: "1x"},
	{figure: "Go tell vs an SPSC ring", dir: "bench", pkg: ".", bench: "BenchmarkTell/proctor", peer: "BenchmarkTell/ring",
		units: []string{"msgs/s"}, scale: 1, kind: rate, benchtime: "1x"},
	// Whether the receiver kept up: its mailbox's high-water mark.
	{figure: "Go tell, the receiver's backlog at most", dir: "bench", pkg: ".", bench: "BenchmarkTell/proctor",
		units: []string{"hw-msgs"}, scale: 1, kind: count, benchtime: "1x"},
	// Why a run was slow: the CPUs the process kept busy (2 while sender
	// and receiver each had a core, 1 when they took turns on one), and
	// the collections that ended during it.
	{figure: "Go tell, CPUs busy during a run", dir: "bench", pkg: ".", bench: "BenchmarkTell/proctor",
		units: []string{"cpus"}, scale: 1, kind: level, benchtime: "1x"},
	{figure: "Go tell, collections during a run", dir: "bench", pkg: ".", bench: "BenchmarkTell/proctor",
		units: []string{"gcs/run"}, scale: 1, kind: level, benchtime: "1x"},
	{figure: "Go ask p50", dir: "bench", pkg: ".", bench: "BenchmarkAsk/proctor", peer: "BenchmarkAsk/protoactor",
		units: []string{"p50-ns"}, scale: 1, kind: duration, benchtime: "1x", limit: 800},
	{figure: "Go ask p99", dir: "bench", pkg: ".", bench: "BenchmarkAsk/proctor", peer: "BenchmarkAsk/protoactor",
		units: []string{"p99-ns"}, scale: 1, kind: duration, benchtime: "1x", limit: 4000},
	{figure: "Go spawn", dir: "bench", pkg: ".", bench: "BenchmarkSpawn/proctor", peer: "BenchmarkSpawn/protoactor",
		units: []string{"spawns/s"}, scale: 1, kind: rate, benchtime: "1x"},
	{figure: "Go idle process, heap", dir: "bench", pkg: ".", bench: "BenchmarkSpawn/proctor", peer: "BenchmarkSpawn/protoactor",
		units: []string{"B/process"}, scale: 1, kind: size, benchtime: "1x"},

	{figure: "Lua tell", dir: ".", pkg: "./lua", bench: "BenchmarkLuaTell",
		units: []string{"msgs/s"}, scale: 1, kind: rate, benchtime: "1000000x", limit: 3e6},
	{figure: "Lua ask p50", dir: ".", pkg: "./lua", bench: "BenchmarkLuaAsk",
		units: []string{"p50-ns"}, scale: 1, kind: duration, benchtime: "200000x", limit: 2000},
	{figure: "Lua spawn", dir: ".", pkg: "./lua", bench: "BenchmarkLuaSpawn",
		units: []string{"spawns/s"}, scale: 1, kind: rate, benchtime: "100000x", limit: 200e3},
	// The same runs' spread: issue 28 asks for ±20 % from run to run.
	{figure: "Lua spawn, spread over the runs", dir: ".", pkg: "./lua", bench: "BenchmarkLuaSpawn",
		units: []string{"spawns/s"}, scale: 1, kind: rate, benchtime: "100000x", spread: 0.2},
	// An idle Erlang process is 327 words, about 2.6 KB (issue 28).
	{figure: "Lua idle process, heap + stack", dir: ".", pkg: "./lua", bench: "BenchmarkLuaIdleMemory",
		units: []string{"B/process", "stack-B/process"}, scale: 1, kind: size, benchtime: "100000x", limit: 2600, slow: true},
	// A million idle Lua processes, all alive: spawned until idle, and the
	// test process's peak RSS from each run's start to that idle point
	// (the benchmark resets the high-water mark per run; the teardown's
	// own peak is its teardown-peak-RSS-MB). It needs about 5 GB, and runs
	// only with its opt-in flag.
	{figure: "Lua million processes, spawned to idle", dir: ".", pkg: "./lua", bench: "BenchmarkLuaMillion",
		units: []string{"spawn-s"}, scale: 1e9, kind: duration, benchtime: "1x", args: []string{"-lua-million"}, limit: 5e9, slow: true},
	{figure: "Lua million processes, peak RSS", dir: ".", pkg: "./lua", bench: "BenchmarkLuaMillion",
		units: []string{"peak-RSS-MB"}, scale: 1 << 20, kind: size, benchtime: "1x", args: []string{"-lua-million"}, limit: 3e9, slow: true},

	{figure: "pg join+leave", dir: ".", pkg: "./kinds/pgscope", bench: "BenchmarkJoinLeave",
		units: []string{"ns/op"}, scale: 1, kind: duration, benchtime: "200000x", limit: 2000},
	{figure: "pg join+leave among 100 k groups", dir: ".", pkg: "./kinds/pgscope", bench: "BenchmarkJoinLeave100kGroups",
		units: []string{"ns/op"}, scale: 1, kind: duration, benchtime: "100000x", limit: 5000},
	{figure: "pg join+leave in a group of 100 k members", dir: ".", pkg: "./kinds/pgscope", bench: "BenchmarkJoinLeaveBigGroup",
		units: []string{"ns/op"}, scale: 1, kind: duration, benchtime: "5000x", limit: 5000},
	{figure: "pg get_members", dir: ".", pkg: "./kinds/pgscope", bench: "BenchmarkGetMembers",
		units: []string{"ns/op"}, scale: 1, kind: duration, benchtime: "2000000x", limit: 40},

	{figure: "pool round-robin tell, per message", dir: ".", pkg: "./kinds/pool", bench: "BenchmarkRoundRobinTell",
		units: []string{"ns/msg"}, scale: 1, kind: duration, benchtime: "300000x"},
	{figure: "pool scatter/gather over 3, per ask", dir: ".", pkg: "./kinds/pool", bench: "BenchmarkScatterGather3",
		units: []string{"scatter-µs/ask"}, scale: 1e3, kind: duration, benchtime: "20000x"},

	// The transport's two modes, in one run: TLS 1.3 (a secret) and
	// plain TCP (no secret). Targets from issue 23, with TLS on.
	{figure: "cluster tell, TLS", dir: ".", pkg: "./cluster", bench: "BenchmarkRemoteTell/tls",
		units: []string{"msgs/s"}, scale: 1, kind: rate, benchtime: "3x", limit: 1e6, slow: true},
	{figure: "cluster tell, plain", dir: ".", pkg: "./cluster", bench: "BenchmarkRemoteTell/plain",
		units: []string{"msgs/s"}, scale: 1, kind: rate, benchtime: "3x", slow: true},
	{figure: "cluster ask p50, TLS", dir: ".", pkg: "./cluster", bench: "BenchmarkRemoteAsk/tls",
		units: []string{"p50-ns"}, scale: 1, kind: duration, benchtime: "3x", limit: 50e3, slow: true},
	{figure: "cluster ask p99, TLS", dir: ".", pkg: "./cluster", bench: "BenchmarkRemoteAsk/tls",
		units: []string{"p99-ns"}, scale: 1, kind: duration, benchtime: "3x", slow: true},
	{figure: "cluster ask p50, plain", dir: ".", pkg: "./cluster", bench: "BenchmarkRemoteAsk/plain",
		units: []string{"p50-ns"}, scale: 1, kind: duration, benchtime: "3x", slow: true},

	// HTTP ingress (issue 26): 64 keep-alive clients echoing 64 bytes
	// through a route to one Lua process and to a pool of 2, against a
	// plain net/http handler doing the same work in the same run.
	{figure: "HTTP echo, Lua route", dir: ".", pkg: "./kinds/http", bench: "BenchmarkHTTPEcho/lua", peer: "BenchmarkHTTPEcho/nethttp",
		units: []string{"req/s"}, scale: 1, kind: rate, benchtime: "60000x", ratio: 0.4},
	{figure: "HTTP echo, pool of 2 Lua routees", dir: ".", pkg: "./kinds/http", bench: "BenchmarkHTTPEcho/pool2", peer: "BenchmarkHTTPEcho/nethttp",
		units: []string{"req/s"}, scale: 1, kind: rate, benchtime: "60000x", ratio: 0.6},
	{figure: "HTTP echo, Lua route p99 at 64 clients", dir: ".", pkg: "./kinds/http", bench: "BenchmarkHTTPEcho/lua",
		units: []string{"p99-µs"}, scale: 1e3, kind: duration, benchtime: "60000x", limit: 5e6},
	{figure: "HTTP echo, pool of 2 p99 at 64 clients", dir: ".", pkg: "./kinds/http", bench: "BenchmarkHTTPEcho/pool2",
		units: []string{"p99-µs"}, scale: 1e3, kind: duration, benchtime: "60000x", limit: 5e6},
	{figure: "HTTP echo, net/http p99 at 64 clients", dir: ".", pkg: "./kinds/http", bench: "BenchmarkHTTPEcho/nethttp",
		units: []string{"p99-µs"}, scale: 1e3, kind: duration, benchtime: "60000x"},

	{figure: "pg fan-out to 64 nodes, per op", dir: ".", pkg: "./pgdist", bench: "BenchmarkPGFanout64",
		units: []string{"ns/op"}, scale: 1, kind: duration, benchtime: "20000x", limit: 60e3},
	{figure: "pg converge, 5 nodes", dir: ".", pkg: "./pgdist", bench: "BenchmarkPGConverge",
		units: []string{"ms/converge"}, scale: 1e6, kind: duration, benchtime: "20x", slow: true},
}

// higherBetter reports whether a larger value of k is better.
func (k kind) higherBetter() bool { return k == rate }

// unitStep is one way to print a kind: values from min up are divided by
// min and printed with format.
type unitStep struct {
	min    float64
	format string
}

// steps are each kind's units, largest first; the last has min 1.
var steps = map[kind][]unitStep{
	rate:     {{1e6, "%.2f M/s"}, {1e3, "%.1f k/s"}, {1, "%.0f /s"}},
	duration: {{1e9, "%.2f s"}, {1e6, "%.1f ms"}, {1e3, "%.2f µs"}, {1, "%.0f ns"}},
	size:     {{1e9, "%.2f GB"}, {1e6, "%.1f MB"}, {1, "%.0f B"}},
	count:    {{1e6, "%.2f M"}, {1e3, "%.1f k"}, {1, "%.0f"}},
	level:    {{1, "%.2f"}},
}

// format prints v, in k's base unit, with a unit that keeps it short.
func (k kind) format(v float64) string {
	st := steps[k]
	for _, u := range st {
		if v >= u.min || u == st[len(st)-1] {
			return fmt.Sprintf(u.format, v/u.min)
		}
	}
	return fmt.Sprint(v)
}

// ratioOf is how many times better ours is than peer's: above 1, ours is
// better, whichever way the figure goes.
func (s *scenario) ratioOf(ours, peer float64) float64 {
	if s.kind.higherBetter() {
		return ours / peer
	}
	return peer / ours
}

// target describes the scenario's target, or "—" when it has none.
func (s *scenario) target() string {
	var parts []string
	if s.limit > 0 {
		op := "≤"
		if s.kind.higherBetter() {
			op = "≥"
		}
		parts = append(parts, op+" "+s.kind.format(s.limit))
	}
	if s.ratio > 0 {
		parts = append(parts, fmt.Sprintf("≥ %.1f× peer", s.ratio))
	}
	if s.minRatio > 0 {
		parts = append(parts, fmt.Sprintf("no run < %.1f×", s.minRatio))
	}
	if s.spread > 0 {
		parts = append(parts, fmt.Sprintf("every run within ±%.0f %% of the median", 100*s.spread))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

// figures are what one row shows: the median of ours, the ratio of the
// medians over the peer's and the least ratio of one run over its peer's
// (NaN when there is no peer), and the farthest run from the median as a
// fraction of it (NaN with fewer than two runs).
type figures struct {
	ours, ratio, minRatio, spread float64
}

// met reports whether f meets the target. A ratio, or a spread, that the
// target needs and the runs could not give is not met.
func (s *scenario) met(f figures) bool {
	if s.limit > 0 {
		if s.kind.higherBetter() && f.ours < s.limit || !s.kind.higherBetter() && f.ours > s.limit {
			return false
		}
	}
	if s.ratio > 0 && (math.IsNaN(f.ratio) || f.ratio < s.ratio) {
		return false
	}
	if s.minRatio > 0 && (math.IsNaN(f.minRatio) || f.minRatio < s.minRatio) {
		return false
	}
	if s.spread > 0 && (math.IsNaN(f.spread) || f.spread > s.spread) {
		return false
	}
	return true
}

// hasTarget reports whether the scenario has a target at all.
func (s *scenario) hasTarget() bool {
	return s.limit > 0 || s.ratio > 0 || s.minRatio > 0 || s.spread > 0
}

// minRatioOf is the least ratio (ratioOf) of run i of ours over run i of
// the peer's, over the runs both have; NaN when there is none.
func (s *scenario) minRatioOf(ours, peer []float64) float64 {
	m := math.NaN()
	for i := range min(len(ours), len(peer)) {
		if r := s.ratioOf(ours[i], peer[i]); math.IsNaN(m) || r < m {
			m = r
		}
	}
	return m
}

// spreadOf is the farthest of xs from their median, as a fraction of the
// median; NaN with fewer than two.
func spreadOf(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	med := median(xs)
	lo, hi := slices.Min(xs), slices.Max(xs)
	return max(hi/med-1, 1-lo/med)
}
