package lua

import (
	"errors"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// State sizing, measured with BenchmarkLuaIdleMemory (100,000 idle
// processes: about 8 KB of heap each, plus a 4 KB goroutine stack; a
// state with its own safe libraries costs 49 KB or more, see NOTES.md): the
// data stack starts at the minimum gopher-lua allows (128 slots) and grows
// on demand up to registryMax; the call stack grows in segments of 8 frames
// up to callStackSize. Deeper recursion is a catchable Lua error.
const (
	registrySize     = 128
	registryMax      = 64 * 1024
	registryGrowStep = 32
	callStackSize    = 200
)

// newState builds a sandboxed state for p: no libraries of its own (the
// standard ones are shared, see shared.go), a small global table, the
// string metatable, and the process's context installed.
func newState(p *Process) *lua.LState {
	t := template()
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       callStackSize,
		RegistrySize:        registrySize,
		RegistryMaxSize:     registryMax,
		RegistryGrowStep:    registryGrowStep,
		MinimizeStackMemory: true,
		MaxStringSize:       p.host.limits.maxString,
		MaxTableEntries:     p.host.limits.maxTable,
	})
	// NewState sizes its global table for the full standard library; a
	// sandboxed script's own globals are few.
	g := L.CreateTable(0, 1)
	g.Metatable = t.globalsMeta
	g.RawSetString("_G", g)
	L.G.Global = g
	L.Env = g
	L.SetMetatable(lua.LString(""), t.stringMeta)
	L.SetContext(p.ctx)
	return L
}

// body returns the ProcFunc of one process of entry e.
func (h *Host) body(env *registry.Env, e *registry.Entry, spec *Spec, args []any) process.ProcFunc {
	return func(pr *process.Proc) (any, error) {
		p := &Process{
			proc:  pr,
			host:  h,
			env:   env,
			entry: e,
			spec:  spec,
			self:  pr.Self(),
		}
		p.ctx = &procContext{Context: pr.Context(), p: p}
		p.mbox.p = p
		p.selfStr = PIDValue(p.self)
		L := newState(p)
		p.L = L
		defer L.Close()
		defer p.stopTimers()
		defer p.runExitHooks()
		return p.run(args)
	}
}

// logger is built on first use: most processes never log.
func (p *Process) logger() {
	if p.log == nil {
		base := p.env.Logger
		if base == nil {
			base = discardLogger
		}
		p.log = base.With("entry", string(p.entry.ID), "pid", p.self.String())
	}
}

func (p *Process) run(args []any) (any, error) {
	L := p.L
	spec := p.spec
	L.Push(L.NewFunctionFromProto(spec.main.Proto))
	if err := L.PCall(0, 1, nil); err != nil {
		return nil, p.scriptError(err)
	}
	mod := L.Get(-1)
	L.Pop(1)
	var fn lua.LValue = lua.LNil
	if t, ok := mod.(*lua.LTable); ok {
		// Not a raw get: a module may inherit its method through
		// __index (setmetatable(M, {__index = Base})). The lookup may run
		// a metamethod, so it runs protected.
		L.Push(L.NewFunction(methodLookup))
		L.Push(t)
		L.Push(lua.LString(spec.Method))
		if err := L.PCall(2, 1, nil); err != nil {
			return nil, p.scriptError(err)
		}
		fn = L.Get(-1)
		L.Pop(1)
	}
	if fn == lua.LNil {
		fn = L.G.Global.RawGetString(spec.Method)
	}
	if _, ok := fn.(*lua.LFunction); !ok {
		return nil, value.NewError(value.KindInvalid, "%s: %s: method %q is not a function (got %s)", p.entry.ID, spec.main.Name, spec.Method, fn.Type())
	}
	L.Push(fn)
	for i, a := range args {
		lv, err := ToLua(L, a)
		if err != nil {
			return nil, fmt.Errorf("%s: args[%d]: %w", p.entry.ID, i+1, err)
		}
		L.Push(lv)
	}
	if err := L.PCall(len(args), 1, nil); err != nil {
		return nil, p.scriptError(err)
	}
	ret := L.Get(-1)
	L.Pop(1)
	v, err := ToGoAt(ret, "return value")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.entry.ID, err)
	}
	return v, nil
}

// methodLookup returns t[name], honouring __index.
func methodLookup(L *lua.LState) int {
	L.Push(L.GetField(L.Get(1), L.CheckString(2)))
	return 1
}

// scriptError turns a raised Lua error into the process's exit reason: an
// error value keeps its kind; anything else becomes an internal error whose
// message carries the file:line gopher-lua put in front of it. The stack
// trace goes to the log, not into the reason.
func (p *Process) scriptError(err error) error {
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return value.FromError(err)
	}
	if p.proc.Stopping() {
		// The context's cancellation surfaced as a Lua error; the core
		// replaces it with the stop reason.
		return value.NewError(value.KindStopped, "stopped")
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
	if ae.StackTrace != "" {
		p.logger()
		p.log.Debug("lua error", "error", msg, "stack", ae.StackTrace)
	}
	return value.NewError(value.KindInternal, "%s", strings.TrimSpace(msg))
}
