package lua

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// State sizing, measured with BenchmarkLuaIdleMemory (100,000 idle
// processes: about 2.4 KB of heap each, and no goroutine stack, see
// suspend.go; a state with its own safe libraries costs 49 KB or more, see
// NOTES.md): the data stack starts at 32 slots, enough for a main function
// waiting on its inbox, and grows on demand (by half its size at least) up
// to registryMax; a process that waits keeps only the slots and frames it
// uses (the fork's CompactSuspended, see drive); the call stack grows in segments of 8 frames up to the
// host's MaxCallDepth (the fork's patch 25: the segments' index grows too).
// Deeper recursion is a catchable Lua error, "stack overflow".
//
// registryMax is 16 MiB of slots (as many as the entries of the largest
// table): 20,000 frames of up to 52 registers each. A function with more
// locals and temporaries than that reaches "registry overflow" first.
const (
	registrySize     = 32
	registryMax      = 1 << 20
	registryGrowStep = 32
)

// newState builds a sandboxed state for p: no libraries of its own (the
// standard ones are shared, see shared.go), a small global table, the
// string metatable, and the process's context installed.
func newState(p *Process) *lua.LState {
	t := template()
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       p.host.limits.maxCalls,
		RegistrySize:        registrySize,
		RegistryMaxSize:     registryMax,
		RegistryGrowStep:    registryGrowStep,
		MinimizeStackMemory: true,
		MaxStringSize:       p.host.limits.maxString,
		MaxTableEntries:     p.host.limits.maxTable,
		MissingMethod:       missingMethod,
	})
	// Without libraries NewState's global table starts empty (the fork's
	// patch 5); the script's globals are its own, and the shared ones are
	// found through globalsMeta. _G is not stored in it (globalIndex
	// answers it): the first string key of a table costs a Go map.
	L.G.Global.Metatable = t.globalsMeta
	L.ShareBuiltinMetatables(t.L) // the string metatable, one for all
	L.SetContext(p.ctx)
	return L
}

// body returns the ProcFunc of one process of entry e. When st is not
// nil the spawner waits for the process to be ready (see start.go).
func (h *Host) body(env *registry.Env, e *registry.Entry, spec *Spec, args []any, st *starting, up *upgradeSlot) process.ProcFunc {
	return func(pr *process.Proc) (any, error) {
		growStack()
		p := &Process{
			proc:  pr,
			host:  h,
			env:   env,
			entry: e,
			spec:  spec,
			self:  pr.Self(),
			start: st,
		}
		p.ctx = &procContext{Context: pr.Context(), p: p}
		p.mbox.p = p
		p.L = newState(p)
		if up != nil {
			p.up = up
			up.p.Store(p)
			p.onExit = append(p.onExit, func() { h.dropUpgradable(p.self, up) })
		}
		return p.drive(func() (bool, any, error) { return p.run(args) })
	}
}

// exit tears the process down once its script has ended with v, err (on
// whichever goroutine that was): the crash report, the spawner still
// waiting, the asks it holds, its exit hooks, its timers, its state. It
// returns the process's exit.
func (p *Process) exit(v any, err error) (any, error) {
	L := p.L
	defer L.Close()
	defer p.stopTimers()
	defer p.runExitHooks()
	defer p.handBackAsks()
	if err != nil && !p.stopped() {
		p.host.crashes.report(p, err)
	}
	if p.upgrading != nil {
		// The new code ended before its first wait: failed if it raised
		// (not if it was stopped meanwhile).
		var failed error
		if err != nil && !p.stopped() {
			failed = err
		}
		p.settleUpgrade(failed)
	}
	// A start still waiting hears why the process ended first.
	if p.start != nil {
		why := err
		if why == nil {
			why = value.NewError(value.KindInternal, "the process ended before it was ready")
		}
		p.started(why)
	}
	return v, err
}

// logger is built on first use: most processes never log.
func (p *Process) logger() *slog.Logger {
	m := p.lazy()
	if m.log == nil {
		base := p.env.Logger
		if base == nil {
			base = discardLogger
		}
		m.log = base.With("entry", string(p.entry.ID), "pid", p.self.String())
	}
	return m.log
}

// run loads the script, runs its init (if the spawner waits for it) and
// starts its method, which may suspend (see drive). init gets the
// process's arguments and main what init returned.
func (p *Process) run(args []any) (suspended bool, v any, err error) {
	prelude := ""
	if p.start != nil && p.spec.Method != initName {
		prelude = initName
	}
	return p.runWith(args, prelude)
}

// runWith loads the script and starts its method with args, after the
// function prelude when it names one the script defines (init at a start,
// upgrade after process.upgrade), whose results are then the method's
// arguments.
func (p *Process) runWith(args []any, prelude string) (suspended bool, v any, err error) {
	L := p.L
	spec := p.spec
	L.Push(L.NewFunctionFromProto(spec.main.Proto))
	if err := L.PCall(0, 1, nil); err != nil {
		return false, nil, p.started(p.scriptError(err))
	}
	mod := L.Get(-1)
	L.Pop(1)
	fn, err := p.lookup(mod, spec.Method)
	if err != nil {
		return false, nil, p.started(err)
	}
	if _, ok := fn.(*lua.LFunction); !ok {
		return false, nil, p.started(value.NewError(value.KindInvalid, "%s: %s: method %q is not a function (got %s)", p.entry.ID, spec.main.Name, spec.Method, fn.Type()))
	}
	base := L.GetTop()
	for i, a := range args {
		lv, err := ToLua(L, a)
		if err != nil {
			L.SetTop(base)
			return false, nil, p.started(fmt.Errorf("%s: args[%d]: %w", p.entry.ID, i+1, err))
		}
		L.Push(lv)
	}
	if prelude != "" {
		initFn, err := p.lookup(mod, prelude)
		if err != nil {
			return false, nil, p.started(err)
		}
		switch initFn.(type) {
		case *lua.LNilType:
		case *lua.LFunction:
			// init(args...) / upgrade(values...) --> main's arguments.
			L.Insert(initFn, base+1)
			if err := L.PCall(L.GetTop()-base-1, lua.MultRet, nil); err != nil {
				return false, nil, p.started(p.scriptError(err))
			}
		default:
			L.SetTop(base)
			return false, nil, p.started(value.NewError(value.KindInvalid, "%s: %s: %s is not a function (got %s)", p.entry.ID, spec.main.Name, prelude, initFn.Type()))
		}
	}
	p.upgradeFn = false // main runs: its first wait settles an upgrade
	p.started(nil)
	L.Insert(fn, base+1)
	suspended, err = L.PCallSuspendable(L.GetTop()-base-1, 2)
	if suspended {
		return true, nil, nil
	}
	v, err = p.mainResult(err)
	return false, v, err
}

// mainResult is what the process's method ended with: the error it raised,
// or the value it returned (on the stack), copied out of the state.
func (p *Process) mainResult(err error) (any, error) {
	L := p.L
	if err != nil {
		return nil, p.scriptError(err)
	}
	ret, rerr := L.Get(-2), L.Get(-1)
	L.Pop(2)
	if ret == lua.LNil && rerr != lua.LNil {
		// return nil, err: the API's failure idiom ends the process as
		// raising err would, so a supervisor, a monitor and --main see a
		// failure, not a normal exit with nothing.
		return nil, errorFromLua(L, rerr)
	}
	v, err := ToGoAt(ret, "return value")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.entry.ID, err)
	}
	return v, nil
}

// initName is the function a script may define to be run before main, on
// the new process, while its spawner waits.
const initName = "init"

// lookup finds name in what the script returned (honouring __index: a
// module may inherit it through setmetatable(M, {__index = Base})), else
// among its globals; nil when it is in neither.
func (p *Process) lookup(mod lua.LValue, name string) (lua.LValue, error) {
	L := p.L
	var fn lua.LValue = lua.LNil
	if t, ok := mod.(*lua.LTable); ok && t.Metatable == lua.LNil {
		// Without a metatable the lookup is a raw read, which cannot
		// fail: no Go function and no protected call to make.
		fn = t.RawGetString(name)
	} else if ok {
		// The lookup may run a metamethod, so it runs protected.
		L.Push(L.NewFunction(methodLookup))
		L.Push(t)
		L.Push(lua.LString(name))
		if err := L.PCall(2, 1, nil); err != nil {
			return nil, p.scriptError(err)
		}
		fn = L.Get(-1)
		L.Pop(1)
	}
	if fn == lua.LNil {
		fn = L.G.Global.RawGetString(name)
	}
	return fn, nil
}

// stopped reports whether the process was asked to stop or was killed
// (gone from the node while its script still ran): its script did not
// crash, whatever error its cancelled context surfaced as.
func (p *Process) stopped() bool {
	return p.proc.Stopping() || !p.Node().Alive(p.self)
}

// methodLookup returns t[name], honouring __index.
func methodLookup(L *lua.LState) int {
	L.Push(L.GetField(L.Get(1), L.CheckString(2)))
	return 1
}

// scriptError turns a raised Lua error into the process's exit reason: an
// error value keeps its kind; anything else becomes an internal error whose
// message carries the file:line gopher-lua put in front of it. Where an
// error value was raised and the traceback are kept for the crash report.
func (p *Process) scriptError(err error) error {
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return value.FromError(err)
	}
	if p.stopped() {
		// The context's cancellation surfaced as a Lua error; the core
		// replaces it with the stop reason.
		return value.NewError(value.KindStopped, "stopped")
	}
	p.failed = &failure{trace: strings.TrimPrefix(strings.TrimSpace(ae.StackTrace), "stack traceback:\n")}
	if p.raised != nil && p.raised.v == ae.Object {
		p.failed.where = p.raised.where
	}
	if e, ok := AsError(ae.Object); ok {
		return e
	}
	// error({kind = …, message = …}): the table shape msg:reply(nil, err)
	// takes; and tables and userdata with __tostring. Their string form
	// ("table: 0x…") would say nothing.
	switch ae.Object.(type) {
	case *lua.LTable, *lua.LUserData:
		return errorFromLua(p.L, ae.Object)
	}
	msg := ae.Object.String()
	if ae.Type == lua.ApiErrorSyntax {
		msg = "syntax error: " + msg
	}
	return value.NewError(value.KindInternal, "%s", strings.TrimSpace(msg))
}
