package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fakeGo answers go test runs from canned output per package.
type fakeGo struct {
	out   map[string]string // pkg → output
	fail  map[string]bool   // pkg → exit with an error
	calls [][]string
	dirs  []string
}

func (f *fakeGo) run(dir string, args []string) ([]byte, error) {
	f.calls = append(f.calls, args)
	f.dirs = append(f.dirs, dir)
	pkg := pkgOf(args)
	var err error
	if f.fail[pkg] {
		err = errors.New("exit status 1")
	}
	return []byte(f.out[pkg]), err
}

// pkgOf returns the package a go test command line runs: its last
// argument, or the one before -args.
func pkgOf(args []string) string {
	if i := slices.Index(args, "-args"); i > 0 {
		return args[i-1]
	}
	return args[len(args)-1]
}

// rowOf returns the table row of figure.
func rowOf(t *testing.T, table, figure string) []string {
	t.Helper()
	for line := range strings.SplitSeq(table, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) == 7 && strings.TrimPrefix(cells[0], "| ") == figure {
			return cells
		}
	}
	t.Fatalf("no row %q in\n%s", figure, table)
	return nil
}

func TestRunTable(t *testing.T) {
	f := &fakeGo{
		out: map[string]string{
			".": sample + `BenchmarkSpawn/proctor-2 1 5 ns/op 300000 spawns/s 300 B/process
BenchmarkSpawn/protoactor-2 1 5 ns/op 100000 spawns/s 700 B/process
`,
			"./kinds/pgscope": "BenchmarkJoinLeave-2 200000 1900 ns/op\nBenchmarkJoinLeave-2 200000 2100 ns/op\nBenchmarkJoinLeave-2 200000 1950 ns/op\n--- FAIL: BenchmarkJoinLeave100kGroups\n",
			"./lua": "BenchmarkLuaTell-2 1000000 300 ns/op 3100000 msgs/s\n" +
				"BenchmarkLuaSpawn-2 100000 1 ns/op 300000 spawns/s\nBenchmarkLuaSpawn-2 100000 1 ns/op 240000 spawns/s\nBenchmarkLuaSpawn-2 100000 1 ns/op 330000 spawns/s\n",
		},
		fail: map[string]bool{"./kinds/pgscope": true},
	}
	o := options{count: 3, short: true, root: "/repo", goTest: f.run, cores: 2, goVersion: "go1.26.8"}
	var out, log bytes.Buffer
	if err := run(o, &out, &log); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	// The machine comes first: the processor go test reported, cores, Go.
	if first, _, _ := strings.Cut(table, "\n"); first != "Machine: AMD EPYC, 2 cores, go1.26.8 linux/amd64" {
		t.Errorf("first line %q; want the machine", first)
	}
	tests := []struct {
		figure                         string
		ours, peer, ratio, target, met string
	}{
		{"Go tell", "7.12 M/s", "11.60 M/s", "0.61× (min 0.46×)", "≥ 2.0× peer, no run < 1.5×", "not met"},
		{"Go ask p50", "651 ns", "n/a", "n/a", "≤ 800 ns", "met"},
		{"Go spawn", "300.0 k/s", "100.0 k/s", "3.00×", "—", "—"},
		{"Go idle process, heap", "300 B", "700 B", "2.33×", "—", "—"},
		{"Lua tell", "3.10 M/s", "", "", "≥ 3.00 M/s", "met"},
		{"Lua ask p50", "n/a", "", "", "≤ 2.00 µs", "n/a"},
		{"Lua spawn", "300.0 k/s", "", "", "≥ 200.0 k/s", "met"},
		{"Lua spawn, spread over the runs", "±20.0 % (240.0 k/s–330.0 k/s)", "", "", "every run within ±20 % of the median", "met"},
		{"pg join+leave", "1.95 µs", "", "", "≤ 2.00 µs", "met"},
		{"pg join+leave among 100 k groups", "n/a", "", "", "≤ 5.00 µs", "n/a"},
		{"pg fan-out to 64 nodes, per op", "n/a", "", "", "≤ 60.00 µs", "n/a"},
	}
	for _, tt := range tests {
		c := rowOf(t, table, tt.figure)
		got := []string{c[2], c[3], c[4], c[5], strings.TrimSuffix(c[6], " |")}
		want := []string{tt.ours, tt.peer, tt.ratio, tt.target, tt.met}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: column %d = %q; want %q", tt.figure, i+2, got[i], want[i])
			}
		}
	}
	for _, slow := range []string{"Lua idle process, heap + stack", "Lua million processes, peak RSS", "cluster tell, TLS", "pg converge, 5 nodes"} {
		if strings.Contains(table, "| "+slow+" |") {
			t.Errorf("-short ran %q", slow)
		}
	}
	if !strings.Contains(log.String(), "exit status 1") {
		t.Errorf("the failed run is not reported:\n%s", log.String())
	}

	// One go test per package and benchtime, each with its benchmarks and -count.
	seen := map[string]bool{}
	for i, args := range f.calls {
		a := strings.Join(args, " ")
		key := f.dirs[i] + " " + pkgOf(args) + " " + args[6]
		if seen[key] {
			t.Errorf("package run twice at one benchtime: %s", key)
		}
		seen[key] = true
		if !strings.Contains(a, "-count 3") || args[0] != "test" || args[2] != "^$" {
			t.Errorf("call %q", a)
		}
		if args[len(args)-1] == "." {
			if f.dirs[i] != filepath.Join("/repo", "bench") || args[4] != "^(BenchmarkTell|BenchmarkAsk|BenchmarkSpawn)$" {
				t.Errorf("core run in %s: %q", f.dirs[i], a)
			}
		}
	}
}

func TestRunOptions(t *testing.T) {
	f := &fakeGo{out: map[string]string{}}
	var out, log bytes.Buffer
	o := options{count: 1, only: regexp.MustCompile("^pg get_members$"), benchtime: "10x", root: "/r", goTest: f.run}
	if err := run(o, &out, &log); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 1 || f.calls[0][4] != "^(BenchmarkGetMembers)$" || f.calls[0][6] != "10x" {
		t.Fatalf("calls %q", f.calls)
	}
	if n := strings.Count(out.String(), "\n"); n != 5 {
		t.Errorf("%d lines, want the machine, a blank line, header, rule and one row:\n%s", n, out.String())
	}
	if c := rowOf(t, out.String(), "pg get_members"); c[2] != "n/a" {
		t.Errorf("missing benchmark printed %q", c[2])
	}
	for _, bad := range []options{
		{count: 1, only: regexp.MustCompile("no such figure"), goTest: f.run},
		{count: 0, goTest: f.run},
	} {
		if err := run(bad, &out, &log); err == nil {
			t.Errorf("run(%+v) did not fail", bad)
		}
	}
}

// The million-process benchmark runs only with its flag, in a go test of
// its own, and a run that reports nothing (the flag unknown, the metrics
// renamed) prints n/a.
func TestRunLuaMillion(t *testing.T) {
	f := &fakeGo{out: map[string]string{"./lua": "BenchmarkLuaMillion-2 1 9 ns/op 4.2 spawn-s 2861 peak-RSS-MB\nBenchmarkLuaMillion-2 1 9 ns/op 4.8 spawn-s 2900 peak-RSS-MB\n"}}
	var out, log bytes.Buffer
	o := options{count: 2, only: regexp.MustCompile("^Lua"), root: "/r", goTest: f.run, cores: 4, threads: 2, goVersion: "go1.26.8"}
	if err := run(o, &out, &log); err != nil {
		t.Fatal(err)
	}
	var million []string
	for _, args := range f.calls {
		if strings.Contains(strings.Join(args, " "), "BenchmarkLuaMillion") {
			million = args
		}
	}
	if want := []string{"1x", "./lua", "-args", "-lua-million"}; len(million) < 4 || million[6] != want[0] || !slices.Equal(million[len(million)-3:], want[1:]) {
		t.Fatalf("the million run: %q", million)
	}
	for _, args := range f.calls {
		if !strings.Contains(strings.Join(args, " "), "BenchmarkLuaMillion") && slices.Contains(args, "-args") {
			t.Errorf("another run got the flag: %q", args)
		}
	}
	table := out.String()
	if first, _, _ := strings.Cut(table, "\n"); first != "Machine: unknown processor, 4 logical CPUs, 2 threads per core (SMT), go1.26.8" {
		t.Errorf("first line %q", first)
	}
	if c := rowOf(t, table, "Lua million processes, spawned to idle"); c[2] != "4.50 s" || c[5] != "≤ 5.00 s" || c[6] != "met |" {
		t.Errorf("time row %q", c)
	}
	if c := rowOf(t, table, "Lua million processes, peak RSS"); c[2] != "3.02 GB" || c[5] != "≤ 3.00 GB" || c[6] != "not met |" {
		t.Errorf("RSS row %q", c)
	}
	if c := rowOf(t, table, "Lua idle process, heap + stack"); c[2] != "n/a" || c[5] != "≤ 2600 B" {
		t.Errorf("idle row %q", c)
	}
	if c := rowOf(t, table, "Lua spawn, spread over the runs"); c[2] != "n/a" {
		t.Errorf("spread row with no runs %q", c)
	}
}

// TestReportCommand runs the real command on one tiny benchmark.
func TestReportCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a real package")
	}
	root, err := findRoot()
	if err != nil {
		t.Fatal(err)
	}
	var out, log bytes.Buffer
	o := options{count: 2, only: regexp.MustCompile("^pg get_members$"), benchtime: "1000x", root: root, goTest: runGo(&log)}
	if err := run(o, &out, &log); err != nil {
		t.Fatal(err)
	}
	c := rowOf(t, out.String(), "pg get_members")
	var v float64
	var unit string
	if _, err := fmt.Sscanf(c[2], "%g %s", &v, &unit); err != nil || v <= 0 || (unit != "ns" && unit != "µs") {
		t.Fatalf("get_members = %q (%v)\n%s\n%s", c[2], err, out.String(), log.String())
	}
}
