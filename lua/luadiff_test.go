package lua

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/proctor-run/proctor/lua/internal/luatest"
)

// The differential test: random Lua 5.1 programs (luagen_test.go) run as
// Proctor processes, with the host's own limits and sandbox, and on C Lua
// 5.1 (Debian's lua5.1); what they print must be the same. Program i of a
// run is generated from seed+i, so one program is run again alone with
// -lua-diff-seed=S+i -lua-diff-count=1. A long run:
//
//	go test ./lua -run TestLuaDifferential -timeout 60m -lua-diff-count=100000 -lua-diff-seed=7
//
// The generator leaves out what differs on purpose (docs/lua/process.md,
// "Known interpreter bugs"): what the sandbox removes (io, os,
// load, setfenv, …), gmatch anchoring at ^, the wording of error messages
// (a program prints only whether a call failed, and an error's value when
// it is not a string), unpack of more than C Lua's 8,000 values, and
// what Lua leaves undefined (the order of next, # of a table with holes,
// addresses).
var (
	luaDiffCount = flag.Int("lua-diff-count", 2000, "programs the differential test against lua5.1 runs (without -race; 500 under it unless set)")
	luaDiffSeed  = flag.Int64("lua-diff-seed", 1, "seed of the differential test's first program")
	luaDiffPrint = flag.Bool("lua-diff-print", false, "print the differential test's programs")
	luaDiffFile  = flag.String("lua-diff-file", "", "run this Lua file on both instead of generated programs")
)

// lua51Driver runs programs separated by luaDiffSep, each in an
// environment of its own, and ends the output of each with the separator.
const lua51Driver = `
local f = assert(io.open(arg[1], "rb"))
local all = f:read("*a")
f:close()
local sep = "\n--@@end@@\n"
local i = 1
while true do
  local j = all:find(sep, i, true)
  if not j then break end
  local fn, err = loadstring(all:sub(i, j - 1), "=program")
  i = j + #sep
  if not fn then
    print("compile error")
  else
    setfenv(fn, setmetatable({}, {__index = _G}))
    local ok = pcall(fn)
    if not ok then print("uncaught error") end
  end
  io.write("@@end@@\n")
end
`

const luaDiffSep = "\n--@@end@@\n"

// lua51 runs programs on C Lua and returns what each printed.
func lua51(t *testing.T, bin string, programs []string) []string {
	t.Helper()
	dir := t.TempDir()
	driver := filepath.Join(dir, "driver.lua")
	input := filepath.Join(dir, "programs.lua")
	if err := os.WriteFile(driver, []byte(lua51Driver), 0o644); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, p := range programs {
		all.WriteString(p)
		all.WriteString(luaDiffSep)
	}
	if err := os.WriteFile(input, []byte(all.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, driver, input).Output()
	if err != nil {
		t.Fatalf("lua5.1: %v", err)
	}
	outs := strings.Split(string(out), "@@end@@\n")
	if len(outs) != len(programs)+1 {
		t.Fatalf("lua5.1 printed %d outputs for %d programs", len(outs)-1, len(programs))
	}
	return outs[:len(programs)]
}

// lockedBuffer is what the host's scripts print to; one program runs at
// a time.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// proctorRunner runs programs as the main function of Proctor processes.
type proctorRunner struct {
	h   *harness
	out *lockedBuffer
	n   int
}

func newProctorRunner(t *testing.T) *proctorRunner {
	out := &lockedBuffer{}
	h := luatest.New(t, func(io.Writer) luatest.Kind { return NewKind(Options{Stdout: out}) })
	return &proctorRunner{h: h, out: out}
}

func (r *proctorRunner) run(program string) string {
	r.n++
	r.out.take()
	name := fmt.Sprintf("p%d", r.n)
	r.h.Write(name+".lua", "return { main = function()\n"+program+"\nend }\n")
	e, errs := r.h.Decode(name, "source: file://"+name+".lua")
	if len(errs) > 0 {
		return "compile error\n"
	}
	ex := r.h.Run(e)
	out := r.out.take()
	if ex.Err != nil {
		out += "uncaught error\n"
	}
	return out
}

func TestLuaDifferential(t *testing.T) {
	bin, err := exec.LookPath("lua5.1")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no lua5.1 found: CI must run the differential test (.ci/run installs Debian's lua5.1 package)")
		}
		t.Skip("no lua5.1 found (apt-get install lua5.1); CI runs this test")
	}
	count, seed := *luaDiffCount, *luaDiffSeed
	if raceEnabled && !flagSet("lua-diff-count") {
		// What the programs compare is the interpreter's semantics, which
		// the race detector does not change; it made 2,000 programs take
		// two minutes of `go test -race ./...` on a busy machine. The
		// race-free run, and the long run, take the full count.
		count = min(count, 500)
	}
	if testing.Short() {
		count = min(count, 200)
	}
	ours := newProctorRunner(t)
	if *luaDiffFile != "" {
		src, err := os.ReadFile(*luaDiffFile)
		if err != nil {
			t.Fatal(err)
		}
		got, want := ours.run(string(src)), lua51(t, bin, []string{string(src)})[0]
		if got != want {
			t.Fatalf("Proctor printed:\n%s\nlua5.1 printed:\n%s\n%s", got, want, firstDifference(got, want))
		}
		return
	}
	const batch = 500
	failures := 0
	for start := 0; start < count && failures < 3; start += batch {
		n := min(batch, count-start)
		blocks := make([][]string, n)
		programs := make([]string, n)
		for i := range n {
			g := &luaGen{r: rand.New(rand.NewSource(seed + int64(start+i)))}
			blocks[i] = g.program()
			programs[i] = strings.Join(blocks[i], "\n")
			if *luaDiffPrint {
				t.Logf("program %d (seed %d):\n%s", start+i, seed+int64(start+i), programs[i])
			}
		}
		want := lua51(t, bin, programs)
		for i := range n {
			got := ours.run(programs[i])
			if got == want[i] {
				continue
			}
			failures++
			min, minGot, minWant := minimizeDiff(t, bin, ours, blocks[i])
			t.Errorf("program %d (-lua-diff-seed=%d -lua-diff-count=1) prints differently from lua5.1.\n"+
				"minimized program:\n%s\n\nProctor printed:\n%s\nlua5.1 printed:\n%s\n%s",
				start+i, seed+int64(start+i), min, minGot, minWant, firstDifference(minGot, minWant))
		}
	}
	t.Logf("%d programs from seed %d", count, seed)
}

// minimizeDiff drops the blocks of a program (all but the first, which
// defines the helpers) one at a time, as long as the output still differs.
func minimizeDiff(t *testing.T, bin string, ours *proctorRunner, blocks []string) (program, got, want string) {
	t.Helper()
	differs := func(bs []string) (bool, string, string) {
		p := strings.Join(bs, "\n")
		w := lua51(t, bin, []string{p})[0]
		g := ours.run(p)
		return g != w, g, w
	}
	_, got, want = differs(blocks)
	for i := len(blocks) - 1; i >= 1; i-- {
		cand := append(append([]string{}, blocks[:i]...), blocks[i+1:]...)
		if d, g, w := differs(cand); d {
			blocks, got, want = cand, g, w
		}
	}
	// The prelude is the same in every program: it is left out of the
	// report (genPrelude in luagen_test.go).
	return "-- genPrelude, then:\n" + strings.Join(blocks[1:], "\n"), got, want
}

func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("first difference, line %d:\n  Proctor: %q\n  lua5.1:  %q", i+1, gl, wl)
		}
	}
	return ""
}

// flagSet reports whether the command line set flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
