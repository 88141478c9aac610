// Command report runs the headline benchmarks of every layer of Proctor —
// the process core beside protoactor-go and beside the physical limit (a
// buffered channel and an SPSC ring carrying the same messages), Lua
// processes, pg scopes, router pools, the cluster transport and pg across
// nodes — and prints one Markdown table: each figure's median over -count runs, the peer's in the
// same run where there is one, their ratio (and, where the target bounds
// every run, the least ratio of one run over the peer's beside it), the
// target and whether it is met. The peer is protoactor-go unless the
// figure names another. A figure may also be the spread of the runs
// (Lua spawn's). Above the table it prints the machine.
//
//	cd bench && go run ./report             # everything, 5 runs each
//	go run ./report -short -count 3         # leave out the slow ones
//	go run ./report -only 'pg|Lua tell'     # figures or benchmarks matching
//
// Each package's benchmarks run as one `go test -run '^$' -bench ... -count N`
// in its module. A benchmark that fails or reports nothing prints n/a.
// Progress and failures go to standard error, the table to standard output.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// options are the command's flags.
type options struct {
	count     int
	short     bool
	only      *regexp.Regexp // nil: all
	benchtime string         // "": each scenario's own
	root      string         // the repository root
	// cores and goVersion describe the machine in the table's header:
	// runtime.NumCPU and runtime.Version of the report itself, which runs
	// on the machine and toolchain that run the benchmarks.
	cores     int
	goVersion string
	// threads is the hardware threads per core (cpu0's SMT siblings, from
	// Linux's sysfs); 0 when unknown. Two threads of one core share its
	// caches and its execution units, which changes what a tell between
	// them costs (docs/performance.md).
	threads int
	// goTest runs `go` with args in dir and returns its standard output.
	goTest func(dir string, args []string) ([]byte, error)
}

func main() {
	var o options
	var only string
	flag.IntVar(&o.count, "count", 5, "runs of each benchmark; the table shows the median")
	flag.BoolVar(&o.short, "short", false, "leave out the slow scenarios (Lua idle memory, cluster, pg convergence)")
	flag.StringVar(&only, "only", "", "run only the figures or benchmarks matching this regular expression")
	flag.StringVar(&o.benchtime, "benchtime", "", "-benchtime for every benchmark (default: each scenario's own)")
	flag.StringVar(&o.root, "root", "", "the repository root (default: found from the working directory)")
	flag.Parse()
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			fmt.Fprintf(os.Stderr, "report: -only: %v\n", err)
			os.Exit(2)
		}
		o.only = re
	}
	if o.root == "" {
		root, err := findRoot()
		if err != nil {
			fmt.Fprintf(os.Stderr, "report: %v\n", err)
			os.Exit(2)
		}
		o.root = root
	}
	o.goTest = runGo(os.Stderr)
	o.cores, o.goVersion, o.threads = runtime.NumCPU(), runtime.Version(), threadsPerCore()
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(1)
	}
}

// findRoot returns the nearest directory, from the working directory up,
// that holds both go.mod and bench/go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isFile(filepath.Join(dir, "go.mod")) && isFile(filepath.Join(dir, "bench", "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no repository root (a directory with go.mod and bench/go.mod) above the working directory; use -root")
		}
		dir = parent
	}
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// runGo runs the go command, its standard error passed on to log.
func runGo(log io.Writer) func(dir string, args []string) ([]byte, error) {
	return func(dir string, args []string) ([]byte, error) {
		var out bytes.Buffer
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Stdout = &out
		cmd.Stderr = log
		err := cmd.Run()
		return out.Bytes(), err
	}
}

// group is one go test run: the benchmarks of one package at one
// benchtime, with one set of test binary flags.
type group struct {
	dir, pkg, benchtime string
	args                []string // after -args
	benches             []string // top-level benchmark names
	res                 *results
}

// selected returns the scenarios o asks for.
func (o *options) selected() []scenario {
	var out []scenario
	for _, s := range scenarios {
		if o.short && s.slow {
			continue
		}
		if o.only != nil && !o.only.MatchString(s.figure) && !o.only.MatchString(s.bench) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// run runs the benchmarks of the selected scenarios and prints the table.
func run(o options, stdout, stderr io.Writer) error {
	sel := o.selected()
	if len(sel) == 0 {
		return errors.New("no scenario matches -only")
	}
	if o.count < 1 {
		return fmt.Errorf("-count %d: must be at least 1", o.count)
	}
	var groups []*group
	of := make([]*group, len(sel)) // the group each scenario's figure comes from
	for i, s := range sel {
		bt := s.benchtime
		if o.benchtime != "" {
			bt = o.benchtime
		}
		top, _, _ := strings.Cut(s.bench, "/")
		var g *group
		for _, h := range groups {
			if h.dir == s.dir && h.pkg == s.pkg && h.benchtime == bt && slices.Equal(h.args, s.args) {
				g = h
				break
			}
		}
		if g == nil {
			g = &group{dir: s.dir, pkg: s.pkg, benchtime: bt, args: s.args, res: newResults()}
			groups = append(groups, g)
		}
		if !slices.Contains(g.benches, top) {
			g.benches = append(g.benches, top)
		}
		of[i] = g
	}
	for _, g := range groups {
		args := []string{"test", "-run", "^$", "-bench", "^(" + strings.Join(g.benches, "|") + ")$",
			"-benchtime", g.benchtime, "-count", fmt.Sprint(o.count), "-timeout", "60m", g.pkg}
		if len(g.args) > 0 {
			args = append(append(args, "-args"), g.args...)
		}
		fmt.Fprintf(stderr, "report: (cd %s && go %s)\n", g.dir, quoteArgs(args))
		out, err := o.goTest(filepath.Join(o.root, g.dir), args)
		if perr := g.res.parse(bytes.NewReader(out)); perr != nil && err == nil {
			err = perr
		}
		if err != nil {
			// What the run printed before it failed still counts; the rest is n/a.
			fmt.Fprintf(stderr, "report: %s %s: %v\n%s", g.dir, g.pkg, err, tail(out, 20))
		}
	}
	fmt.Fprintln(stdout, machineLine(groups, o.cores, o.threads, o.goVersion))
	fmt.Fprintln(stdout)
	printTable(stdout, sel, of)
	return nil
}

// machineLine says what the figures were measured on: the processor go
// test reported, the cores (and whether they are threads of fewer
// physical cores, when threads is known) and the Go version. Figures from
// different processors differ (docs/performance.md keeps a table for
// each), so the table is never printed without it.
func machineLine(groups []*group, cores, threads int, goVersion string) string {
	cpu, goos, goarch := "unknown processor", "", ""
	for _, g := range groups {
		if v := g.res.machine["cpu"]; v != "" {
			cpu = v
		}
		if v := g.res.machine["goos"]; v != "" {
			goos = v
		}
		if v := g.res.machine["goarch"]; v != "" {
			goarch = v
		}
	}
	platform := ""
	if goos != "" && goarch != "" {
		platform = " " + goos + "/" + goarch
	}
	cpus := fmt.Sprintf("%d cores", cores)
	switch {
	case threads == 1:
		cpus += ", 1 thread per core"
	case threads > 1:
		cpus = fmt.Sprintf("%d logical CPUs, %d threads per core (SMT)", cores, threads)
	}
	return fmt.Sprintf("Machine: %s, %s, %s%s", cpu, cpus, goVersion, platform)
}

// threadsPerCore counts the hardware threads of cpu0's core (Linux); 0
// when it cannot tell.
func threadsPerCore() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")
	if err != nil {
		return 0
	}
	return countCPUList(strings.TrimSpace(string(b)))
}

// countCPUList counts the CPUs of a Linux CPU list ("0", "0,2", "0-1");
// 0 when it is malformed.
func countCPUList(list string) int {
	n := 0
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}

// printTable prints the Markdown table of sel, whose figures come from
// groups of (one per scenario).
func printTable(w io.Writer, sel []scenario, of []*group) {
	fmt.Fprintln(w, "| figure | benchmark | ours (median) | peer (median) | ratio | target | met |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	for i := range sel {
		s := &sel[i]
		res := of[i].res
		runs := res.values(s.bench, s.units, s.scale)
		f := figures{ratio: math.NaN(), minRatio: math.NaN(), spread: spreadOf(runs)}
		okOurs := len(runs) > 0
		oursText, peerText, ratioText, metText := "n/a", "", "", "n/a"
		if okOurs {
			f.ours = median(runs)
			oursText = s.kind.format(f.ours)
			if s.spread > 0 {
				oursText = "n/a (one run)"
				if !math.IsNaN(f.spread) {
					oursText = fmt.Sprintf("±%.1f %% (%s–%s)", 100*f.spread, s.kind.format(slices.Min(runs)), s.kind.format(slices.Max(runs)))
				}
			}
		}
		if s.peer != "" {
			peerText = "n/a"
			if peer := res.values(s.peer, s.units, s.scale); len(peer) > 0 {
				peerText = s.kind.format(median(peer))
				if okOurs {
					f.ratio = s.ratioOf(f.ours, median(peer))
					ratioText = fmt.Sprintf("%.2f×", f.ratio)
					if s.minRatio > 0 {
						f.minRatio = s.minRatioOf(runs, peer)
						ratioText += fmt.Sprintf(" (min %.2f×)", f.minRatio)
					}
				}
			}
			if ratioText == "" {
				ratioText = "n/a"
			}
		}
		switch {
		case !s.hasTarget():
			metText = "—"
		case okOurs && s.met(f):
			metText = "met"
		case okOurs && !(s.ratio > 0 && math.IsNaN(f.ratio)) && !(s.spread > 0 && math.IsNaN(f.spread)):
			metText = "not met"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n",
			s.figure, benchName(s), oursText, peerText, ratioText, s.target(), metText)
	}
}

// benchName is how the table names a scenario's benchmark: its package
// and its name.
func benchName(s *scenario) string {
	pkg := strings.TrimPrefix(s.pkg, "./")
	if s.dir == "bench" {
		pkg = "bench"
	}
	return "`" + pkg + "` " + s.bench
}

// quoteArgs prints args as a shell would need them.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$|()*? ") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
