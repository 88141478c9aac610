package lua

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/value"
)

// Error values: what a failed operation hands a script (nil, err), what
// errors.new makes, what a process raises and a monitor receives. They
// read like errors: tostring(err) and "..": "kind: message"; err.kind,
// err.message, err.errors (an aggregate's members), err.cause (what it
// wraps) and err.details; == compares kind, message and code; < and <=
// raise, naming what to compare instead; a field they lack raises with
// the nearest one. They cross processes and nodes intact (value.Error).

// ErrorValue returns e as a Lua error value: err.kind, err.message,
// err.errors (a list of error values, for aggregates), err.cause,
// err.details, and tostring(err) "kind: message".
func ErrorValue(L *lua.LState, e *value.Error) lua.LValue {
	if e == nil {
		return lua.LNil
	}
	return errorType.New(L, e)
}

// errorType is the type of error values: their fields are read through
// __index.
var errorType = NewType("error",
	Func{Name: "__index", Fn: errorIndex, Doc: "err.kind, err.message, err.errors (an aggregate's members), err.cause (the error it wraps) and err.details."},
	Func{Name: "__tostring", Fn: errorToString, Doc: "\"kind: message\".", Results: "string"},
	Func{Name: "__eq", Fn: errorEq, Doc: "Two error values are equal when their kinds, messages and codes are.", Params: "other: error", Results: "boolean"},
	Func{Name: "__lt", Fn: errorCompare, Doc: "Raises: error values have no order (compare err.kind or err.message).", Params: "other: error"},
	Func{Name: "__le", Fn: errorCompare, Doc: "Raises: error values have no order (compare err.kind or err.message).", Params: "other: error"},
	Func{Name: "__concat", Fn: errorConcat, Doc: "Concatenates the error as \"kind: message\".", Params: "other: any", Results: "string"},
)

// detailsToLua is ToLua, reached through a variable: err.details may hold
// error values, and ToLua makes those with errorType, whose own methods
// cannot refer back to it in a package-level initializer.
var detailsToLua func(L *lua.LState, v any) (lua.LValue, error)

func init() { detailsToLua = ToLua }

// errorFields are the fields of an error value, for suggestions.
var errorFields = []string{"cause", "details", "errors", "kind", "message"}

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
	value.KindLimit, value.KindAggregate, value.KindStopped, value.KindNoConnection, value.KindInternal,
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
	key, ok := L.Get(2).(lua.LString)
	if !ok {
		L.Push(lua.LNil)
		return 1
	}
	switch key {
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
	case "cause":
		if e.Cause == nil {
			L.Push(lua.LNil)
			return 1
		}
		ud := L.NewUserData()
		ud.Value, ud.Metatable = e.Cause, L.Get(1).(*lua.LUserData).Metatable
		L.Push(ud)
	case "details":
		lv, err := detailsToLua(L, e.Details)
		if err != nil {
			lv = lua.LNil
		}
		L.Push(lv)
	default:
		L.RaiseError("%s", missingMessage("error value", "field", string(key), errorFields))
	}
	return 1
}

// errorText is an error as tostring shows it: "kind: message".
func errorText(e *value.Error) string {
	if e.Message == "" {
		return string(e.Kind)
	}
	return string(e.Kind) + ": " + e.Message
}

func errorToString(L *lua.LState) int {
	e, _ := AsError(L.Get(1))
	if e == nil {
		L.Push(lua.LString("error"))
		return 1
	}
	L.Push(lua.LString(errorText(e)))
	return 1
}

// errorEq: Lua calls __eq only for two userdata with this metamethod, so
// both are error values; one compared with a string is false, as any
// value of another type is.
func errorEq(L *lua.LState) int {
	a, _ := AsError(L.Get(1))
	b, _ := AsError(L.Get(2))
	L.Push(lua.LBool(a != nil && b != nil && a.Kind == b.Kind && a.Message == b.Message && a.Code == b.Code))
	return 1
}

func errorCompare(L *lua.LState) int {
	L.RaiseError("attempt to compare error values: they have no order (compare err.kind or err.message)")
	return 0
}

// errorConcat renders both operands as tostring would, within the string
// limit; a side that is neither a string, a number nor an error raises.
func errorConcat(L *lua.LState) int {
	var parts [2]string
	for i := range parts {
		switch v := L.Get(i + 1).(type) {
		case lua.LString, lua.LNumber:
			parts[i] = lua.LVAsString(v)
		default:
			e, ok := AsError(v)
			if !ok {
				L.RaiseError("attempt to concatenate an error value with a %s", v.Type())
			}
			parts[i] = errorText(e)
		}
	}
	checkStringSize(L, "..", float64(len(parts[0])+len(parts[1])))
	L.Push(lua.LString(parts[0] + parts[1]))
	return 1
}
