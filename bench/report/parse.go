package main

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
)

// results holds what one `go test -bench` run printed: for every
// benchmark (by its full name, without the -GOMAXPROCS suffix), one map of
// unit to value per line it printed, in order, and the benchmarks that
// failed.
type results struct {
	runs   map[string][]map[string]float64
	failed map[string]bool
	// machine holds the header lines go test prints before the results
	// ("cpu", "goos", "goarch"), by key; the last run's value wins.
	machine map[string]string
}

func newResults() *results {
	return &results{runs: map[string][]map[string]float64{}, failed: map[string]bool{}, machine: map[string]string{}}
}

// parse reads the output of `go test -bench` and adds what it finds to r.
// Lines that are not benchmark results are skipped; a "--- FAIL:" line
// marks its benchmark (and the benchmarks above it) failed.
func (r *results) parse(out io.Reader) error {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "--- FAIL: "); ok {
			name, _, _ = strings.Cut(name, " ")
			name = trimProcs(name)
			for {
				r.failed[name] = true
				i := strings.LastIndexByte(name, '/')
				if i < 0 {
					break
				}
				name = name[:i]
			}
			continue
		}
		if key, val, ok := strings.Cut(line, ": "); ok && (key == "cpu" || key == "goos" || key == "goarch") {
			r.machine[key] = strings.TrimSpace(val)
			continue
		}
		name, vals, ok := parseLine(line)
		if !ok {
			continue
		}
		r.runs[name] = append(r.runs[name], vals)
	}
	return sc.Err()
}

// parseLine parses one result line:
//
//	BenchmarkTell/proctor-2   1   281086543 ns/op   7117300 msgs/s
//
// into the benchmark's name and its unit → value pairs.
func parseLine(line string) (string, map[string]float64, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return "", nil, false
	}
	if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
		return "", nil, false // the iteration count
	}
	vals := map[string]float64{}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", nil, false
		}
		vals[f[i+1]] = v
	}
	if len(vals) == 0 {
		return "", nil, false
	}
	return trimProcs(f[0]), vals, true
}

// trimProcs drops the -N suffix go test adds for GOMAXPROCS.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// value returns the median over the runs of bench of the sum of units
// (one unit, or several that add up to the figure, such as heap and stack
// bytes), scaled by scale; ok is false when the benchmark failed or never
// reported every unit.
func (r *results) value(bench string, units []string, scale float64) (float64, bool) {
	xs := r.values(bench, units, scale)
	if len(xs) == 0 {
		return 0, false
	}
	return median(xs), true
}

// values returns the figure of each run of bench, in the order they ran
// (see value): none when the benchmark failed. A run that did not report
// every unit is left out.
func (r *results) values(bench string, units []string, scale float64) []float64 {
	if r.failed[bench] {
		return nil
	}
	var xs []float64
	for _, run := range r.runs[bench] {
		sum, all := 0.0, true
		for _, u := range units {
			v, ok := run[u]
			if !ok {
				all = false
				break
			}
			sum += v
		}
		if all {
			xs = append(xs, sum*scale)
		}
	}
	return xs
}

// median of xs, which must not be empty: the middle value, or the mean of
// the two middle ones.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
