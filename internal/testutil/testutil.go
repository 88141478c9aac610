// Package testutil holds the helpers every package's tests share: polling
// for a condition with a generous deadline (never sleep-and-hope), a log
// sink that concurrent writers may share, and the -soak and -lua-million
// flags.
//
// Every package with tests imports it (a blank import will do), so that
// `go test ./... -run Soak -soak 2m` is understood by every test binary:
// one that did not define -soak would fail on it. The same holds for
// -lua-million.
package testutil

import (
	"bytes"
	"flag"
	"strconv"
	"sync"
	"testing"
	"time"
)

var soak = flag.Duration("soak", 0, "run the opt-in soak tests for this long (go test ./... -run Soak -soak 2m); 0 skips them")

// Soak returns the -soak duration; 0 (the default) means soak tests skip.
func Soak() time.Duration { return *soak }

var luaMillion = flag.Bool("lua-million", false, "run the opt-in benchmark that spawns a million idle Lua processes (go test ./lua -run '^$' -bench LuaMillion -lua-million); it needs about 12 GB")

// LuaMillion reports whether -lua-million asks for the million-process
// benchmark; it skips otherwise.
func LuaMillion() bool { return *luaMillion }

// WaitingTests lets n of a package's parallel tests (t.Parallel) run at
// once, unless the command line sets -test.parallel. It is for packages
// whose tests mostly wait on real timers, not on the CPU (a cluster's
// failure detection, a membership's gossip rounds): the default of
// GOMAXPROCS, two on a small machine, would queue those waits one after
// another. Call it from TestMain, before m.Run.
func WaitingTests(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !set {
		if cur, err := strconv.Atoi(f.Value.String()); err == nil && cur < n {
			_ = f.Value.Set(strconv.Itoa(n))
		}
	}
}

// Deadline is how long Eventually waits: generous, since the machines that
// run the tests are small and busy.
const Deadline = 10 * time.Second

// Eventually polls cond until it holds, failing t once Deadline has passed.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, Deadline, what, cond)
}

// EventuallyWithin is Eventually with its own deadline.
func EventuallyWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	EventuallyExplained(t, d, what, cond, nil)
}

// EventuallyExplained is EventuallyWithin whose failure also prints what
// explain returns then (a subprocess's logs, say).
func EventuallyExplained(t testing.TB, d time.Duration, what string, cond func() bool, explain func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			if explain != nil {
				t.Fatalf("timed out after %s waiting for %s:\n%s", d, what, explain())
			}
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers, for capturing
// logs.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
