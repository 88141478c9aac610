package lua

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// A script's limits are errors it can catch, never a crash of the Go
// process: a failed allocation is fatal to the whole runtime, and a Go
// builtin that runs for minutes cannot be interrupted by terminate. So
// every builtin that builds a string checks the result's size against one
// limit before it allocates (the .. operator does the same inside the VM,
// see third_party/gopher-lua/PATCHES.md), table growth is bounded, and
// every builtin that loops over input of unbounded size looks at the
// process's context as it goes (see interrupted).

// Defaults of Options.
const (
	// DefaultMaxStringSize is the default per-string limit: 64 MiB.
	DefaultMaxStringSize = 64 << 20
	// DefaultMaxTableEntries is the default limit on the entries of one
	// table: 1,048,576 (16 MiB as an array, about 100 MiB as a map).
	DefaultMaxTableEntries = 1 << 20
	// DefaultMaxCallDepth is the default limit on nested calls: 20,000,
	// C Lua 5.1's (LUAI_MAXCALLS), so that recursive code that runs there
	// runs here.
	DefaultMaxCallDepth = 20_000
)

// Defaults of Options: what one process may hold. A script that calls
// time.after, process.listen, monitor, link or register in a loop, or
// never reads its events, took the node's memory; now it gets nil, limit
// (the events past the limit are dropped as dead letters).
const (
	// DefaultMaxTimers is the default bound on a process's pending
	// time.after timers: 100,000 (about 30 MB).
	DefaultMaxTimers = 100_000
	// DefaultMaxListens is the default bound on the topics a process
	// listens to: 1,000.
	DefaultMaxListens = 1_000
)

// DefaultProcessLimits are the defaults of Options.ProcessLimits: 100,000
// unread events, 100,000 links, 100,000 monitors and 100 names.
var DefaultProcessLimits = process.Limits{MaxEvents: 100_000, MaxLinks: 100_000, MaxMonitors: 100_000, MaxNames: 100}

// limits are a host's limits; every state it makes carries the string and
// table limits in its lua.Options, where the builtins (shared by all
// hosts) read them.
type limits struct {
	maxString  int
	maxTable   int
	maxCalls   int
	maxTimers  int
	maxListens int
	proc       process.Limits // every script process's SpawnOptions.Limits
}

// newLimits returns opts' limits, defaults in place of zeros.
func newLimits(opts Options) limits {
	orDefault := func(v, def int) int {
		if v <= 0 {
			return def
		}
		return v
	}
	d := DefaultProcessLimits
	return limits{
		maxString:  orDefault(opts.MaxStringSize, DefaultMaxStringSize),
		maxTable:   orDefault(opts.MaxTableEntries, DefaultMaxTableEntries),
		maxCalls:   orDefault(opts.MaxCallDepth, DefaultMaxCallDepth),
		maxTimers:  orDefault(opts.MaxTimers, DefaultMaxTimers),
		maxListens: orDefault(opts.MaxListens, DefaultMaxListens),
		proc: process.Limits{
			MaxEvents:   orDefault(opts.ProcessLimits.MaxEvents, d.MaxEvents),
			MaxLinks:    orDefault(opts.ProcessLimits.MaxLinks, d.MaxLinks),
			MaxMonitors: orDefault(opts.ProcessLimits.MaxMonitors, d.MaxMonitors),
			MaxNames:    orDefault(opts.ProcessLimits.MaxNames, d.MaxNames),
		},
	}
}

// checkStringSize raises when a result of n bytes made by what would be
// over the state's per-string limit.
func checkStringSize(L *lua.LState, what string, n float64) {
	if limit := L.Options.MaxStringSize; limit > 0 && n > float64(limit) {
		L.RaiseError("string too long: %s would make %.0f bytes, over the limit of %d", what, n, limit)
	}
}

// valueSize is at least the size of v (a value of the value model) written
// out: its strings, and a few bytes for everything else.
func valueSize(v any) float64 {
	switch x := v.(type) {
	case string:
		return float64(len(x))
	case []any:
		n := 2.0
		for _, e := range x {
			n += 1 + valueSize(e)
		}
		return n
	case map[string]any:
		n := 2.0
		for k, e := range x {
			n += 2 + float64(len(k)) + valueSize(e)
		}
		return n
	case value.Record:
		n := 2.0
		for i := range x.Len() {
			k, e := x.Field(i)
			n += 2 + float64(len(k)) + valueSize(e)
		}
		return n
	case map[any]any:
		n := 2.0
		for k, e := range x {
			n += 2 + valueSize(k) + valueSize(e)
		}
		return n
	case *value.Error:
		return float64(len(x.Kind)+len(x.Message)) + 2
	}
	return 8
}

// checkTableSize raises when t holds the most entries a table may hold.
func checkTableSize(L *lua.LState, t *lua.LTable) {
	if limit := L.Options.MaxTableEntries; limit > 0 && t.Entries() >= limit {
		L.RaiseError("table overflow: a table may hold at most %d entries", limit)
	}
}

// checkEvery is how many items a builtin's loop handles between two looks
// at the process's context: small enough to stop within microseconds,
// large enough that the look costs nothing.
const checkEvery = 1 << 10

// interrupted returns the error to stop with when L's process has been
// asked to stop, else nil. A builtin that may run long calls it every
// checkEvery items and raises what it returns, as the VM does between two
// instructions.
func interrupted(L *lua.LState) error {
	ctx := L.Context()
	if ctx == nil {
		return nil
	}
	return ctx.Err() // an atomic load; Done would make a channel
}

// checkInterrupt raises when L's process has been asked to stop.
func checkInterrupt(L *lua.LState) {
	if err := interrupted(L); err != nil {
		L.RaiseError("%s", err.Error())
	}
}

// stopCheck returns a function that fails once the process has been asked
// to stop: what the pattern matcher polls while it runs. It is made once
// per process.
func (p *Process) stopCheck() func() error {
	m := p.lazy()
	if m.stopFn == nil {
		ctx := p.proc.Context()
		m.stopFn = func() error {
			if ctx.Err() != nil {
				return errStopping
			}
			return nil
		}
	}
	return m.stopFn
}
