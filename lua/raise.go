package lua

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// assert and error are Proctor's own, so that an error value is raised
// intact: gopher-lua's assert takes only a string message ("bad argument
// #2 to assert (string expected, got userdata)"), which made the Lua
// idiom assert(f()) useless with functions that return nil, err. A value
// that is not a string carries no position, so where it was raised is
// kept on the process: a script that does not catch it is reported with
// that location (see the crash report in state.go).

// raised is the last value a process raised that is not a string, and
// where.
type raised struct {
	v     lua.LValue
	where string // "main.lua:12", "" when unknown
}

// luaAssert is assert(v [, message, ...]): v and the rest when v is true;
// otherwise it raises message, a string with the caller's position in
// front of it, as Lua does, and any other value (an error value, a
// table) intact, as Lua 5.3 does.
func luaAssert(L *lua.LState) int {
	L.CheckAny(1)
	if L.ToBool(1) {
		return L.GetTop()
	}
	switch msg := L.Get(2).(type) {
	case *lua.LNilType:
		L.RaiseError("assertion failed!")
	case lua.LString, lua.LNumber:
		L.RaiseError("%s", lua.LVAsString(msg))
	default:
		raiseValue(L, msg, 1)
	}
	return 0
}

// luaError is error(v [, level]): Lua's, remembering where a value that is
// not a string was raised.
func luaError(L *lua.LState) int {
	v := L.CheckAny(1)
	level := L.OptInt(2, 1)
	if n, ok := v.(lua.LNumber); ok && level > 0 {
		// As Lua 5.1, a number is a string to error: it gets the
		// position in front (error(5) raises "file:1: 5").
		v = lua.LString(n.String())
	}
	if _, ok := v.(lua.LString); ok {
		L.Error(v, level)
		return 0
	}
	raiseValue(L, v, level)
	return 0
}

// raiseValue raises v unchanged, recording the position of the function
// level frames up (1: the caller of error or assert).
func raiseValue(L *lua.LState, v lua.LValue, level int) {
	r := &raised{v: v}
	if level > 0 {
		if w := strings.TrimSuffix(L.Where(level), ":"); !strings.HasPrefix(w, "[G]") {
			r.where = w
		}
	}
	ProcessOf(L).raised = r
	L.Error(v, 0)
}
