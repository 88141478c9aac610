package lua

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/internal/suggest"
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
	what   string // "process", "pg", "pg scope": how a misspelt name's error calls it
	noun   string // "function" or "method"
	funcs  []Func
	consts []Const
	once   sync.Once
	table  *lua.LTable // shared; never handed to a script
	meta   *lua.LTable // {__index = table, __metatable = false}
}

func newLibrary(what, noun string, funcs []Func, consts []Const) *library {
	return &library{what: what, noun: noun, funcs: funcs, consts: consts}
}

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
		lib.table = t.L.CreateTable(0, len(lib.funcs)+len(lib.consts))
		names := make([]string, 0, len(lib.funcs)+len(lib.consts))
		for _, f := range lib.funcs {
			lib.table.RawSetString(f.Name, t.L.NewFunction(f.Fn))
			names = append(names, f.Name)
		}
		for _, c := range lib.consts {
			lib.table.RawSetString(c.Name, lua.LString(c.Value))
			names = append(names, c.Name)
		}
		lib.table.Metatable = missingMeta(t.L, lib.what, lib.noun, names)
		lib.meta = protectedMeta(t.L, lib.table)
	})
}

// missingMeta is the metatable of a shared table of functions: a name it
// does not hold raises an error that names the table and the name, with
// the nearest one it does hold (`pg scope has no method "broadcst" (did
// you mean "broadcast"?)`), where Lua would hand back nil and the call
// would fail with "attempt to call a non-function object". Only misses
// reach it: a name that is there is found without a call. Keys that are
// not strings read as nil.
func missingMeta(L *lua.LState, what, noun string, names []string) *lua.LTable {
	names = slices.Sorted(slices.Values(names))
	m := L.CreateTable(0, 2)
	m.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		key, ok := L.Get(2).(lua.LString)
		if !ok {
			L.Push(lua.LNil)
			return 1
		}
		L.RaiseError("%s", missingMessage(what, noun, string(key), names))
		return 0
	}))
	m.RawSetString("__metatable", lua.LFalse)
	return m
}

// missingMessage is the error for a name that candidates lack.
func missingMessage(what, noun, name string, candidates []string) string {
	msg := fmt.Sprintf("%s has no %s %q", what, noun, name)
	if s := suggest.Closest(name, candidates); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
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
		libs[m.Name] = newLibrary(m.Name, "function", m.Funcs, m.Consts)
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
	stringNames []string               // the string library's functions, sorted
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
		t.globals.RawSetString("assert", L.NewFunction(luaAssert))
		t.globals.RawSetString("error", L.NewFunction(luaError))
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
			var names []string
			lib.ForEach(func(k, _ lua.LValue) {
				if ks, ok := k.(lua.LString); ok && !strings.HasPrefix(string(ks), "__") {
					names = append(names, string(ks))
				}
			})
			if name == lua.StringLibName {
				t.stringNames = slices.Sorted(slices.Values(names))
				t.stringMeta = protectedMeta(L, stringMethods(L, lib, names))
			}
			lib.Metatable = missingMeta(L, name, "function", names)
			t.libs[name] = protectedMeta(L, lib)
		}
		// Globals absent from a state's own _G are looked up here; the
		// libraries (string, process, ...) are not in the shared table
		// itself but created per state on first use, as proxies.
		gm := L.CreateTable(0, 2)
		gm.RawSetString("__index", L.NewFunction(globalIndex))
		gm.RawSetString("__metatable", lua.LFalse)
		t.globals.Metatable = gm
		t.globalsMeta = protectedMeta(L, t.globals)
		// Every state shares the template's metatables of builtin types
		// (newState): the string metatable, and nothing else.
		L.SetMetatable(lua.LString(""), t.stringMeta)
		L.ShareBuiltinMetatables(L)

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
	if key == "_G" {
		// The state's own globals (newState does not store them under
		// _G: see there). Not argument 1: a miss reaches this function
		// through the shared table, which is argument 1 here.
		L.Push(L.G.Global)
		return 1
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
	L.Push(proxy)
	return 1
}

// missingMethod raises, for a method call on a string that finds no
// method, the error a misspelt library function gets
// (("x"):uper() -> string has no function "uper" (did you mean "upper"?)).
// Other values keep Lua's own error.
func missingMethod(L *lua.LState, obj lua.LValue, name string) {
	if _, ok := obj.(lua.LString); ok {
		L.RaiseError("%s", missingMessage(lua.StringLibName, "function", name, templateVal.stringNames))
	}
}

// stringMethods is what string values index: the string library's
// functions, then what the script added to its own string table (after
// string.split = f, ("a,b"):split() works, as in Lua), else nil. A value's
// missing field reads as nil, as in Lua (s.op on a payload that may be a
// string or a table); only the library itself (string.fomat) raises on a
// misspelt name.
func stringMethods(L *lua.LState, lib *lua.LTable, names []string) *lua.LTable {
	methods := L.CreateTable(0, len(names))
	for _, n := range names {
		methods.RawSetString(n, lib.RawGetString(n))
	}
	m := L.CreateTable(0, 1)
	m.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		// The state's own string table exists once the script named it.
		if own, ok := L.G.Global.RawGetString(lua.StringLibName).(*lua.LTable); ok {
			L.Push(own.RawGet(L.Get(2)))
			return 1
		}
		L.Push(lua.LNil)
		return 1
	}))
	methods.Metatable = m
	return methods
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
