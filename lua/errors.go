package lua

import (
	"fmt"
	"slices"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/internal/suggest"
	"github.com/proctor-run/proctor/value"
)

// errorsModule is require("errors"), built into every host: it makes,
// wraps and tests error values, with Wippy's names (errors.new,
// errors.wrap, errors.is, the kind constants) and Go's (errors.unwrap).
var errorsModule = Module{
	Name: "errors",
	Doc:  "Error values: make, wrap (keeping the cause), test the kind, read the cause.",
	Funcs: []Func{
		{Name: "new", Fn: errorsNew, Doc: "Makes an error value: new(kind, message [, details]), new{kind=, message=, details=}, or new(message) of kind internal.",
			Params: "kind: string|table, message?: string, details?: any", Results: "error"},
		{Name: "wrap", Fn: errorsWrap, Doc: "An error of err's kind whose message is message: err's, with err as its cause; nil for a nil err.",
			Params: "err: error|string|table|nil, message: string, details?: any", Results: "error|nil"},
		{Name: "is", Fn: errorsIs, Doc: "Whether err, or an error it wraps, has this kind (a string) or is this error (same kind and message, or the same runtime error).",
			Params: "err: any, target: string|error", Results: "boolean"},
		{Name: "cause", Fn: errorsCause, Doc: "The error err wraps, or nil.",
			Params: "err: any", Results: "error|nil"},
		{Name: "unwrap", Fn: errorsCause, Doc: "errors.cause, by Go's name.",
			Params: "err: any", Results: "error|nil"},
	},
	Consts: []Const{
		{Name: "INVALID", Value: string(value.KindInvalid), Doc: "Bad input: a wrong value, a name taken, a payload that cannot be copied."},
		{Name: "NOT_FOUND", Value: string(value.KindNotFound), Doc: "No such process, name, entry or key."},
		{Name: "TIMEOUT", Value: string(value.KindTimeout), Doc: "A deadline passed."},
		{Name: "NOT_JOINED", Value: string(value.KindNotJoined), Doc: "A pg leave by a process that is not a member."},
		{Name: "LIMIT", Value: string(value.KindLimit), Doc: "A bound was reached: a full mailbox, a size limit."},
		{Name: "AGGREGATE", Value: string(value.KindAggregate), Doc: "Several errors, one per part, in err.errors (a scatter that failed)."},
		{Name: "STOPPED", Value: string(value.KindStopped), Doc: "A process stopped or exited (one asked, or the caller)."},
		{Name: "NOCONNECTION", Value: string(value.KindNoConnection), Doc: "The destination's node is down or unreachable (Erlang's noconnection): a send, ask, monitor or link across nodes."},
		{Name: "INTERNAL", Value: string(value.KindInternal), Doc: "Anything else: a script's raised string, a bug."},
	},
	Types: []*Type{errorType},
}

// errorTableFields are the fields of errors.new's table form.
var errorTableFields = []string{"details", "kind", "message"}

// errors.new(kind, message [, details]) | errors.new{kind=, message=,
// details=} | errors.new(message)
func errorsNew(L *lua.LState) int {
	var kind, msg lua.LValue
	var details lua.LValue = lua.LNil
	switch a := L.Get(1).(type) {
	case *lua.LTable:
		a.ForEach(func(k, _ lua.LValue) {
			if ks, ok := k.(lua.LString); !ok || !slices.Contains(errorTableFields, string(ks)) {
				L.ArgError(1, missingMessage("errors.new's table", "field", lua.LVAsString(k), errorTableFields)+" (it takes kind, message and details)")
			}
		})
		kind, msg, details = a.RawGetString("kind"), a.RawGetString("message"), a.RawGetString("details")
		if kind == lua.LNil {
			kind = lua.LString(value.KindInternal)
		}
	case lua.LString:
		if L.GetTop() == 1 {
			kind, msg = lua.LString(value.KindInternal), a
		} else {
			kind, msg, details = a, L.Get(2), L.Get(3)
		}
	default:
		L.ArgError(1, "a kind (a string) or a table {kind=, message=, details=} expected, got "+L.Get(1).Type().String())
	}
	k := checkKind(L, 1, kind)
	m, ok := msg.(lua.LString)
	if !ok {
		L.ArgError(2, "message must be a string, got "+msg.Type().String())
	}
	e := &value.Error{Kind: k, Message: string(m)}
	e.Details = detailsArg(L, 3, details)
	L.Push(ErrorValue(L, e))
	return 1
}

// checkKind reads kind as one of the error kinds; anything else raises,
// naming the kinds and the nearest one.
func checkKind(L *lua.LState, n int, kind lua.LValue) value.Kind {
	s, ok := kind.(lua.LString)
	if !ok {
		L.ArgError(n, "kind must be a string, got "+kind.Type().String())
	}
	if slices.Contains(errorKinds, value.Kind(s)) {
		return value.Kind(s)
	}
	names := kindNames()
	msg := fmt.Sprintf("unknown error kind %q", string(s))
	if sug := suggest.Closest(string(s), names); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	L.ArgError(n, msg+"; the kinds are "+strings.Join(names, ", "))
	return ""
}

func kindNames() []string {
	names := make([]string, len(errorKinds))
	for i, k := range errorKinds {
		names[i] = string(k)
	}
	return names
}

// detailsArg copies an error's details: any value that can cross a process
// boundary; one that cannot (a function) raises.
func detailsArg(L *lua.LState, n int, lv lua.LValue) any {
	if lv == lua.LNil {
		return nil
	}
	v, err := ToGoAt(lv, "details")
	if err != nil {
		L.ArgError(n, err.Error())
	}
	return v
}

// errors.wrap(err, message [, details]) --> error | nil
func errorsWrap(L *lua.LState) int {
	if L.Get(1) == lua.LNil {
		L.Push(lua.LNil)
		return 1
	}
	cause := errorFromLua(L, L.CheckAny(1))
	msg := L.CheckString(2)
	L.Push(ErrorValue(L, value.Wrap(cause, msg, detailsArg(L, 3, L.Get(3)))))
	return 1
}

// errors.is(err, target) --> boolean: target a kind, or an error value
// (value.Error.Is: the same runtime error by its code, or the same kind
// and message), matched against err and every error it wraps.
func errorsIs(L *lua.LState) int {
	e, isErr := AsError(L.Get(1))
	var match func(*value.Error) bool
	switch t := L.Get(2).(type) {
	case lua.LString:
		k := checkKind(L, 2, t)
		match = func(x *value.Error) bool { return x.Kind == k }
	default:
		te, ok := AsError(t)
		if !ok {
			L.ArgError(2, "a kind (a string) or an error value expected, got "+t.Type().String())
		}
		match = func(x *value.Error) bool { return x == te || x.Is(te) }
	}
	for i := 0; isErr && e != nil && i <= value.MaxDepth; i++ {
		if match(e) {
			L.Push(lua.LTrue)
			return 1
		}
		e = e.Cause
	}
	L.Push(lua.LFalse)
	return 1
}

// errors.cause(err) / errors.unwrap(err) --> error | nil
func errorsCause(L *lua.LState) int {
	e, ok := AsError(L.Get(1))
	if !ok || e.Cause == nil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(ErrorValue(L, e.Cause))
	return 1
}
