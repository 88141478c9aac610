package lua

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/value"
)

// Memory per process is dominated by what every state would build for
// itself: the standard library tables, the globals process/channel/time/
// log, the metatables of channels, messages and errors. They are built once
// here, in a template state, and shared by reference. Stock gopher-lua has
// no immutable tables, so sharing is guarded: a script never holds a
// shared table. It sees a per-state proxy (an empty table whose protected
// metatable indexes the shared one, created on first use of the global),
// getmetatable honours __metatable, and writes land in the proxy. Shared
// tables are only ever read after init, so concurrent states may read them.

// library is a set of Funcs built into one shared table: a global library,
// a module, or a type's methods. Its functions are shared by every state:
// they must find their process with ProcessOf(L), never close over one.
type library struct {
	funcs []Func
	once  sync.Once
	table *lua.LTable // shared; never handed to a script
	meta  *lua.LTable // {__index = table, __metatable = false}
}

func newLibrary(funcs []Func) *library { return &library{funcs: funcs} }

// proxy returns a fresh table for one state that reads through to the
// library: what require and the first use of a global hand the script.
func (lib *library) proxy(L *lua.LState) *lua.LTable {
	t := L.CreateTable(0, 0)
	t.Metatable = lib.metatable()
	return t
}

func (lib *library) metatable() *lua.LTable {
	lib.build()
	return lib.meta
}

func (lib *library) shared() *lua.LTable {
	lib.build()
	return lib.table
}

func (lib *library) build() {
	lib.once.Do(func() {
		t := template()
		tmplMu.Lock()
		defer tmplMu.Unlock()
		lib.table = t.L.CreateTable(0, len(lib.funcs))
		for _, f := range lib.funcs {
			lib.table.RawSetString(f.Name, t.L.NewFunction(f.Fn))
		}
		lib.meta = protectedMeta(t.L, lib.table)
	})
}

// globalModules are the libraries every script has as globals. They are
// declared like modules, but a script reaches them by name, without
// require.
func globalModules() []Module {
	return []Module{processModule, channelModule, timeModule, logModule}
}

// globalLibraries builds a host's globals.
func globalLibraries() map[string]*library {
	libs := map[string]*library{}
	for _, m := range globalModules() {
		libs[m.Name] = newLibrary(m.Funcs)
	}
	return libs
}

// protectedMeta returns {__index = index, __metatable = false}: the
// metatable of a proxy, which a script can neither read nor replace.
func protectedMeta(L *lua.LState, index lua.LValue) *lua.LTable {
	m := L.CreateTable(0, 2)
	m.RawSetString("__index", index)
	m.RawSetString("__metatable", lua.LFalse)
	return m
}

// templateState holds what every process state shares.
type templateState struct {
	L *lua.LState // only used to build shared values, never run

	globals     *lua.LTable // shared index of every state's _G
	globalsMeta *lua.LTable
	stringMeta  *lua.LTable
	libs        map[string]*lua.LTable // name -> proxy metatable of a standard library
	coResume    lua.LGFunction         // gopher-lua's coroutine.resume (see wrappedResume)
}

var (
	templateOnce sync.Once
	templateVal  *templateState
	tmplMu       sync.Mutex // serialises builds that use the template state
)

// baseRemoved are base functions a sandboxed script must not have: they
// load code from files or strings, reach the environment of functions, or
// act on the whole Go process.
var baseRemoved = []string{
	"dofile", "loadfile", "load", "loadstring", "module", "getfenv", "setfenv",
	"collectgarbage", "newproxy", "_printregs", "require", "print", "getmetatable",
	"_GOPHER_LUA_VERSION", "_G",
}

func template() *templateState {
	templateOnce.Do(func() {
		L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 64, RegistrySize: 256})
		for _, lib := range []struct {
			name string
			fn   lua.LGFunction
		}{
			{lua.BaseLibName, lua.OpenBase},
			{lua.TabLibName, lua.OpenTable},
			{lua.StringLibName, lua.OpenString},
			{lua.MathLibName, lua.OpenMath},
			{lua.CoroutineLibName, lua.OpenCoroutine},
		} {
			L.Push(L.NewFunction(lib.fn))
			L.Push(lua.LString(lib.name))
			L.Call(1, 0)
		}
		t := &templateState{L: L, libs: map[string]*lua.LTable{}}
		g := L.G.Global
		t.globals = L.CreateTable(0, 64)
		g.ForEach(func(k, v lua.LValue) {
			if _, ok := v.(*lua.LFunction); ok {
				t.globals.RawSet(k, v)
			}
		})
		for _, name := range baseRemoved {
			t.globals.RawSetString(name, lua.LNil)
		}
		t.globals.RawSetString("_VERSION", g.RawGetString("_VERSION"))
		t.globals.RawSetString("print", L.NewFunction(luaPrint))
		t.globals.RawSetString("require", L.NewFunction(luaRequire))
		t.globals.RawSetString("getmetatable", L.NewFunction(luaGetMetatable))
		for _, name := range []string{lua.TabLibName, lua.StringLibName, lua.MathLibName, lua.CoroutineLibName} {
			lib := g.RawGetString(name).(*lua.LTable)
			switch name {
			case lua.CoroutineLibName:
				t.coResume = wrapCoroutineLib(L, lib)
			case lua.TabLibName:
				wrapTableLib(L, lib)
			}
			if name == lua.StringLibName {
				// gopher-lua's string table is also the string metatable.
				lib.RawSetString("__index", lua.LNil)
				lib.RawSetString("dump", lua.LNil)
				wrapStringLib(L, lib)
			}
			t.libs[name] = protectedMeta(L, lib)
		}
		t.stringMeta = protectedMeta(L, g.RawGetString(lua.StringLibName))
		// Globals absent from a state's own _G are looked up here; the
		// libraries (string, process, ...) are not in the shared table
		// itself but created per state on first use, as proxies.
		gm := L.CreateTable(0, 2)
		gm.RawSetString("__index", L.NewFunction(globalIndex))
		gm.RawSetString("__metatable", lua.LFalse)
		t.globals.Metatable = gm
		t.globalsMeta = protectedMeta(L, t.globals)

		templateVal = t
	})
	return templateVal
}

// globalIndex creates the calling state's proxy of a library on first use
// and stores it in the state's own globals, so later lookups are direct.
func globalIndex(L *lua.LState) int {
	key, ok := L.Get(2).(lua.LString)
	if !ok {
		return 0
	}
	meta, ok := templateVal.libs[string(key)]
	if !ok {
		lib, global := ProcessOf(L).host.globals[string(key)]
		if !global {
			return 0
		}
		meta = lib.metatable()
	}
	proxy := L.CreateTable(0, 0)
	proxy.Metatable = meta
	L.G.Global.RawSetString(string(key), proxy)
	if key == lua.StringLibName {
		// Strings index the process's own string table from now on, so a
		// function the script adds to it is a method too: after
		// string.split = f, ("a,b"):split() works, as in Lua. Until the
		// script names string, they index the shared library directly.
		L.SetMetatable(lua.LString(""), protectedMeta(L, proxy))
	}
	L.Push(proxy)
	return 1
}

// luaGetMetatable is getmetatable honouring __metatable, so shared
// metatables cannot be reached (gopher-lua's own ignores it).
func luaGetMetatable(L *lua.LState) int {
	obj := L.CheckAny(1)
	mt := L.GetMetatable(obj)
	if t, ok := mt.(*lua.LTable); ok {
		if protected := t.RawGetString("__metatable"); protected != lua.LNil {
			L.Push(protected)
			return 1
		}
	}
	L.Push(mt)
	return 1
}

// ErrorValue returns e as a Lua error value: err.kind, err.message,
// err.errors (a list of error values, for aggregates) and tostring(err).
func ErrorValue(L *lua.LState, e *value.Error) lua.LValue {
	if e == nil {
		return lua.LNil
	}
	return errorType.New(L, e)
}

// errorType is the type of error values: their fields are read through
// __index (err.kind, err.message, err.errors).
var errorType = NewType("error",
	Func{Name: "__index", Fn: errorIndex, Doc: "err.kind, err.message and err.errors (a list of error values, for aggregates)."},
	Func{Name: "__tostring", Fn: errorToString, Doc: "The error's message.", Results: "string"},
)

// AsError returns the *value.Error inside an error value, if lv is one.
func AsError(lv lua.LValue) (*value.Error, bool) {
	if ud, ok := lv.(*lua.LUserData); ok {
		e, ok := ud.Value.(*value.Error)
		return e, ok && e != nil
	}
	return nil, false
}

// ErrorFromLua turns what a script hands over as an error (an error
// value, a string, or a table {kind=, message=}) into a *value.Error. A
// table whose kind is not an error kind, or whose message is not a string,
// becomes an internal error that shows what was given.
func ErrorFromLua(lv lua.LValue) *value.Error { return errorFromLua(nil, lv) }

// errorKinds are the kinds a script may give an error table.
var errorKinds = []value.Kind{
	value.KindInvalid, value.KindNotFound, value.KindTimeout, value.KindNotJoined,
	value.KindLimit, value.KindAggregate, value.KindStopped, value.KindInternal,
}

// errorFromLua is ErrorFromLua that, with a state, also renders any other
// value through its __tostring metamethod (a table raised with one would
// otherwise read "table: 0x…").
func errorFromLua(L *lua.LState, lv lua.LValue) *value.Error {
	if e, ok := AsError(lv); ok {
		return e
	}
	switch v := lv.(type) {
	case lua.LString:
		return value.NewError(value.KindInternal, "%s", string(v))
	case *lua.LTable:
		kind, msg := v.RawGetString("kind"), v.RawGetString("message")
		if kind != lua.LNil || msg != lua.LNil {
			return errorFromTable(L, kind, msg)
		}
	}
	return value.NewError(value.KindInternal, "%s", describe(L, lv))
}

// errorFromTable is the error of a table {kind = kind, message = msg}.
func errorFromTable(L *lua.LState, kind, msg lua.LValue) *value.Error {
	var bad []string
	k := value.KindInternal
	switch kv := kind.(type) {
	case *lua.LNilType:
	case lua.LString:
		if slices.Contains(errorKinds, value.Kind(kv)) {
			k = value.Kind(kv)
		} else {
			names := make([]string, len(errorKinds))
			for i, ek := range errorKinds {
				names[i] = string(ek)
			}
			bad = append(bad, fmt.Sprintf("kind %q is not one of %s", string(kv), strings.Join(names, ", ")))
		}
	default:
		bad = append(bad, "kind is a "+kind.Type().String()+", not a string")
	}
	text := ""
	switch mv := msg.(type) {
	case *lua.LNilType:
	case lua.LString, lua.LNumber:
		text = lua.LVAsString(mv)
	default:
		bad = append(bad, "message is a "+msg.Type().String()+", not a string")
	}
	if len(bad) > 0 {
		return value.NewError(value.KindInternal, "error raised with an invalid error table {kind = %s, message = %s}: %s",
			describe(L, kind), describe(L, msg), strings.Join(bad, "; "))
	}
	if text == "" {
		text = string(k)
	}
	return value.NewError(k, "%s", text)
}

// describe renders lv for an error message: strings quoted, anything with a
// __tostring metamethod through it (when L is given and the metamethod
// returns a string without raising), the rest as tostring would.
func describe(L *lua.LState, lv lua.LValue) string {
	switch v := lv.(type) {
	case lua.LString:
		return strconv.Quote(string(v))
	case *lua.LTable, *lua.LUserData:
		if L != nil && L.GetMetaField(lv, "__tostring") != lua.LNil {
			L.Push(L.NewFunction(toStringMeta))
			L.Push(lv)
			if err := L.PCall(1, 1, nil); err == nil {
				s, ok := L.Get(-1).(lua.LString)
				L.Pop(1)
				if ok {
					return string(s)
				}
			}
		}
	}
	return lv.String()
}

func toStringMeta(L *lua.LState) int {
	L.Push(L.ToStringMeta(L.Get(1)))
	return 1
}

func errorIndex(L *lua.LState) int {
	e, _ := AsError(L.Get(1))
	if e == nil {
		return 0
	}
	switch L.CheckString(2) {
	case "kind":
		L.Push(lua.LString(e.Kind))
	case "message":
		L.Push(lua.LString(e.Message))
	case "errors":
		if e.Errors == nil {
			L.Push(lua.LNil)
			return 1
		}
		// The members share err's metatable (ErrorValue would make an
		// initialization cycle: errorType's methods would refer to it).
		meta := L.Get(1).(*lua.LUserData).Metatable
		t := L.CreateTable(len(e.Errors), 0)
		for _, m := range e.Errors {
			if m == nil {
				continue
			}
			ud := L.NewUserData()
			ud.Value, ud.Metatable = m, meta
			t.Append(ud)
		}
		L.Push(t)
	default:
		L.Push(lua.LNil)
	}
	return 1
}

func errorToString(L *lua.LState) int {
	e, _ := AsError(L.Get(1))
	if e == nil {
		L.Push(lua.LString("error"))
		return 1
	}
	L.Push(lua.LString(e.Message))
	return 1
}
