package main

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// sample is captured output of `go test -bench` (bench/, -count 3).
const sample = `goos: linux
goarch: amd64
pkg: github.com/proctor-run/proctor/bench
cpu: AMD EPYC
BenchmarkTell/proctor-2         	       1	 281086543 ns/op	   7117300 msgs/s
BenchmarkTell/proctor-2         	       1	 275150889 ns/op	   7269782 msgs/s
BenchmarkTell/proctor-2         	       1	 352015602 ns/op	   5683011 msgs/s
BenchmarkTell/protoactor-2      	       1	 389510747 ns/op	   5229063 msgs/s
BenchmarkTell/protoactor-2      	       1	 174133857 ns/op	  11601155 msgs/s
BenchmarkTell/protoactor-2      	       1	 165063382 ns/op	  12364151 msgs/s
BenchmarkAsk/proctor-2          	       1	 260559152 ns/op	       641.0 p50-ns	      2063 p99-ns
BenchmarkAsk/proctor-2          	       1	 353221206 ns/op	       651.0 p50-ns	      2043 p99-ns
BenchmarkAsk/proctor-2          	       1	 181114429 ns/op	       671.0 p50-ns	      2073 p99-ns
BenchmarkLuaIdleMemory-2        	  100000	      9915 ns/op	     10342 B/process	      4201 stack-B/process	    100003 goroutines
BenchmarkLuaIdleMemory-2        	  100000	      9915 ns/op	     10100 B/process	      4300 stack-B/process	    100003 goroutines
BenchmarkGetMembers             	 2000000	        56.10 ns/op	      48 B/op	       1 allocs/op
--- FAIL: BenchmarkBroken/sub-2
    bench_test.go:12: boom
BenchmarkBroken/sub-2           	       1	       100 ns/op
BenchmarkNoMetric-2             	       1
PASS
ok  	github.com/proctor-run/proctor/bench	7.502s
`

func TestParseLine(t *testing.T) {
	tests := []struct {
		line string
		name string
		vals map[string]float64
		ok   bool
	}{
		{"BenchmarkTell/proctor-2  \t 1\t 281086543 ns/op\t 7117300 msgs/s", "BenchmarkTell/proctor",
			map[string]float64{"ns/op": 281086543, "msgs/s": 7117300}, true},
		{"BenchmarkAsk/proctor-16 1 5 ns/op 641.0 p50-ns 2063 p99-ns", "BenchmarkAsk/proctor",
			map[string]float64{"ns/op": 5, "p50-ns": 641, "p99-ns": 2063}, true},
		{"BenchmarkGetMembers 2000000 56.10 ns/op", "BenchmarkGetMembers", map[string]float64{"ns/op": 56.1}, true},
		{"BenchmarkScatterGather3-2 20000 1.5 scatter-µs/ask", "BenchmarkScatterGather3", map[string]float64{"scatter-µs/ask": 1.5}, true},
		{"BenchmarkName-with-dash-2 1 3 ns/op", "BenchmarkName-with-dash", map[string]float64{"ns/op": 3}, true},
		{"BenchmarkNoMetric-2  1", "", nil, false},
		{"BenchmarkTell/proctor-2 x 3 ns/op", "", nil, false},
		{"BenchmarkTell/proctor-2 1 abc ns/op", "", nil, false},
		{"goos: linux", "", nil, false},
		{"    bench_test.go:12: BenchmarkX 1 2 ns/op", "", nil, false},
		{"", "", nil, false},
	}
	for _, tt := range tests {
		name, vals, ok := parseLine(tt.line)
		if ok != tt.ok || name != tt.name || len(vals) != len(tt.vals) {
			t.Errorf("parseLine(%q) = %q, %v, %v; want %q, %v, %v", tt.line, name, vals, ok, tt.name, tt.vals, tt.ok)
			continue
		}
		for u, v := range tt.vals {
			if vals[u] != v {
				t.Errorf("parseLine(%q)[%s] = %v; want %v", tt.line, u, vals[u], v)
			}
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5, 5, 1, 9, 7}, 5},
		{[]float64{-1, 1}, 0},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.xs...)
		if got := median(tt.xs); got != tt.want {
			t.Errorf("median(%v) = %v; want %v", tt.xs, got, tt.want)
		}
		for i := range in {
			if in[i] != tt.xs[i] {
				t.Fatalf("median reordered its argument: %v", tt.xs)
			}
		}
	}
}

func TestResultsValue(t *testing.T) {
	r := newResults()
	if err := r.parse(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		bench string
		units []string
		scale float64
		want  float64
		ok    bool
	}{
		{"BenchmarkTell/proctor", []string{"msgs/s"}, 1, 7117300, true},
		{"BenchmarkTell/protoactor", []string{"msgs/s"}, 1, 11601155, true},
		{"BenchmarkAsk/proctor", []string{"p50-ns"}, 1, 651, true},
		{"BenchmarkAsk/proctor", []string{"p99-ns"}, 1, 2063, true},
		{"BenchmarkLuaIdleMemory", []string{"B/process", "stack-B/process"}, 1, 14471.5, true},
		{"BenchmarkGetMembers", []string{"ns/op"}, 1, 56.1, true},
		{"BenchmarkGetMembers", []string{"ns/op"}, 1e3, 56100, true},
		{"BenchmarkAsk/proctor", []string{"msgs/s"}, 1, 0, false},       // unit never reported
		{"BenchmarkSpawn/proctor", []string{"spawns/s"}, 1, 0, false},   // never ran
		{"BenchmarkBroken/sub", []string{"ns/op"}, 1, 0, false},         // failed
		{"BenchmarkBroken", []string{"ns/op"}, 1, 0, false},             // its parent too
		{"BenchmarkNoMetric", []string{"ns/op"}, 1, 0, false},           // printed no figure
		{"BenchmarkTell/proctor", []string{"msgs/s", "x"}, 1, 0, false}, // one of the sum missing
	}
	for _, tt := range tests {
		got, ok := r.value(tt.bench, tt.units, tt.scale)
		if ok != tt.ok || math.Abs(got-tt.want) > 1e-9*math.Abs(tt.want) {
			t.Errorf("value(%s, %v) = %v, %v; want %v, %v", tt.bench, tt.units, got, ok, tt.want, tt.ok)
		}
	}
	// values keeps the runs in the order they ran, for pairing them.
	if got := r.values("BenchmarkTell/protoactor", []string{"msgs/s"}, 1); !slices.Equal(got, []float64{5229063, 11601155, 12364151}) {
		t.Errorf("values = %v", got)
	}
	if got := r.values("BenchmarkBroken/sub", []string{"ns/op"}, 1); got != nil {
		t.Errorf("values of a failed benchmark = %v", got)
	}
}

func TestCountCPUList(t *testing.T) {
	for list, want := range map[string]int{"0": 1, "0,1": 2, "0-1": 2, "0-3,8-11": 8, "": 0, "x": 0, "3-1": 0} {
		if got := countCPUList(list); got != want {
			t.Errorf("countCPUList(%q) = %d; want %d", list, got, want)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		k    kind
		v    float64
		want string
	}{
		{rate, 12.5e6, "12.50 M/s"},
		{rate, 205e3, "205.0 k/s"},
		{rate, 12, "12 /s"},
		{duration, 641, "641 ns"},
		{duration, 2063, "2.06 µs"},
		{duration, 36.5e6, "36.5 ms"},
		{size, 10342 + 4201, "14543 B"},
		{size, 697, "697 B"},
		{size, 5.3e9, "5.30 GB"},
		{size, 2.5e6, "2.5 MB"},
		{duration, 9.3e9, "9.30 s"},
		{count, 261647, "261.6 k"},
		{count, 12, "12"},
	}
	for _, tt := range tests {
		if got := tt.k.format(tt.v); got != tt.want {
			t.Errorf("format(%v) = %q; want %q", tt.v, got, tt.want)
		}
	}
}

func TestTargetAndMet(t *testing.T) {
	tell := scenario{kind: rate, ratio: 2, minRatio: 1.5}
	floor := scenario{kind: rate, limit: 12e6, ratio: 1.5}
	p50 := scenario{kind: duration, limit: 800}
	spread := scenario{kind: rate, spread: 0.2}
	none := scenario{kind: rate}
	nan := math.NaN()
	tests := []struct {
		s   scenario
		f   figures
		met bool
	}{
		{tell, figures{ours: 1, ratio: 2.1, minRatio: 1.6}, true},
		{tell, figures{ours: 1, ratio: 2.1, minRatio: 1.4}, false}, // one run below 1.5×
		{tell, figures{ours: 1, ratio: 1.9, minRatio: 1.9}, false},
		{tell, figures{ours: 1, ratio: nan, minRatio: nan}, false},
		{tell, figures{ours: 1, ratio: 2.5, minRatio: nan}, false},
		{floor, figures{ours: 13e6, ratio: 1.6, minRatio: nan}, true},
		{floor, figures{ours: 11e6, ratio: 1.6, minRatio: nan}, false},
		{floor, figures{ours: 13e6, ratio: 1.4, minRatio: nan}, false},
		{p50, figures{ours: 800, ratio: nan}, true},
		{p50, figures{ours: 801, ratio: nan}, false},
		{spread, figures{ours: 1, spread: 0.2}, true},
		{spread, figures{ours: 1, spread: 0.21}, false},
		{spread, figures{ours: 1, spread: nan}, false},
		{none, figures{ours: 1, ratio: nan}, true},
	}
	for _, tt := range tests {
		if got := tt.s.met(tt.f); got != tt.met {
			t.Errorf("%s: met(%+v) = %v", tt.s.target(), tt.f, got)
		}
	}
	for _, tt := range []struct {
		s    scenario
		want string
	}{
		{tell, "≥ 2.0× peer, no run < 1.5×"},
		{floor, "≥ 12.00 M/s, ≥ 1.5× peer"},
		{p50, "≤ 800 ns"},
		{spread, "every run within ±20 % of the median"},
		{none, "—"},
	} {
		if got := tt.s.target(); got != tt.want {
			t.Errorf("target %q; want %q", got, tt.want)
		}
	}
	if r := p50.ratioOf(600, 3000); r != 5 {
		t.Errorf("latency ratio %v; want 5 (ours 5× better)", r)
	}
	if r := tell.ratioOf(12e6, 8e6); r != 1.5 {
		t.Errorf("rate ratio %v", r)
	}
	// Run i against run i: the medians' ratio is 2, the worst run's 1.2.
	if r := tell.minRatioOf([]float64{40, 24, 36}, []float64{20, 20, 12}); r != 1.2 {
		t.Errorf("min ratio %v; want 1.2", r)
	}
	if r := p50.minRatioOf([]float64{500, 1000}, []float64{3000, 2000}); r != 2 {
		t.Errorf("latency min ratio %v; want 2", r)
	}
	if r := tell.minRatioOf(nil, []float64{1}); !math.IsNaN(r) {
		t.Errorf("min ratio of no runs %v", r)
	}
}

func TestSpread(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{300, 240, 330}, 0.2}, // 240 is 20 % under the median
		{[]float64{100, 150, 100}, 0.5},
		{[]float64{5, 5}, 0},
		{[]float64{5}, math.NaN()},
		{nil, math.NaN()},
	}
	for _, tt := range tests {
		got := spreadOf(tt.xs)
		if math.IsNaN(tt.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("spreadOf(%v) = %v; want %v", tt.xs, got, tt.want)
		}
	}
}
