package main

import (
	"math"
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
		{size, 10342 + 4201, "14.2 KiB"},
		{size, 697, "697 B"},
	}
	for _, tt := range tests {
		if got := tt.k.format(tt.v); got != tt.want {
			t.Errorf("format(%v) = %q; want %q", tt.v, got, tt.want)
		}
	}
}

func TestTargetAndMet(t *testing.T) {
	tell := scenario{kind: rate, limit: 12e6, ratio: 1.5}
	p50 := scenario{kind: duration, limit: 800}
	none := scenario{kind: rate}
	tests := []struct {
		s           scenario
		ours, ratio float64
		met         bool
	}{
		{tell, 13e6, 1.6, true},
		{tell, 11e6, 1.6, false},
		{tell, 13e6, 1.4, false},
		{tell, 13e6, math.NaN(), false},
		{p50, 800, math.NaN(), true},
		{p50, 801, math.NaN(), false},
		{none, 1, math.NaN(), true},
	}
	for _, tt := range tests {
		if got := tt.s.met(tt.ours, tt.ratio); got != tt.met {
			t.Errorf("%s: met(%v, %v) = %v", tt.s.target(), tt.ours, tt.ratio, got)
		}
	}
	if got := tell.target(); got != "≥ 12.00 M/s, ≥ 1.5× peer" {
		t.Errorf("tell target %q", got)
	}
	if got := p50.target(); got != "≤ 800 ns" {
		t.Errorf("p50 target %q", got)
	}
	if got := none.target(); got != "—" {
		t.Errorf("no target %q", got)
	}
	if r := p50.ratioOf(600, 3000); r != 5 {
		t.Errorf("latency ratio %v; want 5 (ours 5× better)", r)
	}
	if r := tell.ratioOf(12e6, 8e6); r != 1.5 {
		t.Errorf("rate ratio %v", r)
	}
}
