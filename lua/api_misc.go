package lua

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/value"
)

var timeLib = NewLibrary(map[string]lua.LGFunction{
	"now":   timeNow,
	"sleep": timeSleep,
	"after": timeAfter,
})

var logLib = NewLibrary(map[string]lua.LGFunction{
	"debug": func(L *lua.LState) int { return logAt(L, slog.LevelDebug) },
	"info":  func(L *lua.LState) int { return logAt(L, slog.LevelInfo) },
	"warn":  func(L *lua.LState) int { return logAt(L, slog.LevelWarn) },
	"error": func(L *lua.LState) int { return logAt(L, slog.LevelError) },
})

var jsonLib = NewLibrary(map[string]lua.LGFunction{
	"encode": jsonEncode,
	"decode": jsonDecode,
})

func init() {
	globalLibs["time"] = timeLib
	globalLibs["log"] = logLib
	registerModule("json", func(_ *Process, L *lua.LState) int {
		L.Push(jsonLib.Proxy(L))
		return 1
	})
}

func nowMillis() lua.LNumber {
	return lua.LNumber(float64(time.Now().UnixMicro()) / 1000)
}

func timeNow(L *lua.LState) int {
	L.Push(nowMillis())
	return 1
}

// timeSleep waits d; it returns true, or nil, err when the process is
// asked to stop meanwhile.
func timeSleep(L *lua.LState) int {
	p := ProcessOf(L)
	d := CheckDuration(L, 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		L.Push(lua.LTrue)
		return 1
	case <-p.proc.Context().Done():
		return ReturnError(L, errStopping)
	}
}

// afterTimer is a pending time.after; the process stops the ones still
// pending when it exits, so a long timer does not outlive it.
type afterTimer struct {
	t     *time.Timer
	fired atomic.Bool
}

func timeAfter(L *lua.LState) int {
	p := ProcessOf(L)
	d := CheckDuration(L, 1)
	c := p.NewChannel(1)
	c.conv = func(_ *lua.LState, v any) lua.LValue { return v.(lua.LNumber) }
	at := &afterTimer{}
	at.t = time.AfterFunc(d, func() {
		at.fired.Store(true)
		c.Offer(nowMillis())
	})
	p.timers.add(at)
	L.Push(c.Value(L))
	return 1
}

// timerList holds a process's pending time.after timers. Fired ones are
// swept out when the list has doubled since the last sweep, so a script
// that keeps many long timers pending (a deadline per message in a select
// loop) pays a constant amortised cost per timer, not a scan of all of
// them on every call.
type timerList struct {
	list  []*afterTimer
	sweep int // sweep when list reaches this length (0: minSweep)
}

const minSweep = 64

func (l *timerList) add(at *afterTimer) {
	if len(l.list) >= max(l.sweep, minSweep) {
		live := l.list[:0]
		for _, t := range l.list {
			if !t.fired.Load() {
				live = append(live, t)
			}
		}
		clear(l.list[len(live):])
		l.list = live
		l.sweep = 2 * len(live)
	}
	l.list = append(l.list, at)
}

func (p *Process) stopTimers() {
	for _, t := range p.timers.list {
		t.t.Stop()
	}
	p.timers = timerList{}
}

// logAt logs message with the fields of an optional table, through the
// entry's logger (every line carries the entry ID and the PID).
func logAt(L *lua.LState, level slog.Level) int {
	p := ProcessOf(L)
	msg := L.ToStringMeta(L.CheckAny(1)).String()
	lg := p.Logger()
	if !lg.Enabled(context.Background(), level) {
		return 0
	}
	var attrs []slog.Attr
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		t := L.CheckTable(2)
		t.ForEach(func(k, v lua.LValue) {
			attrs = append(attrs, slog.Any(k.String(), logValue(v)))
		})
		sort.Slice(attrs, func(i, j int) bool { return attrs[i].Key < attrs[j].Key })
	}
	lg.LogAttrs(context.Background(), level, msg, attrs...)
	return 0
}

// logValue renders a Lua value for a log field: plain values as they are,
// tables copied, anything else by its string form.
func logValue(v lua.LValue) any {
	switch x := v.(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return float64(x)
	case lua.LBool:
		return bool(x)
	case *lua.LNilType:
		return nil
	}
	if e, ok := AsError(v); ok {
		return e.String()
	}
	if g, err := ToGo(v); err == nil {
		return g
	}
	return v.String()
}

// jsonEncode encodes a value as JSON (object keys sorted, so the output is
// stable). Tables with mixed keys become objects with string keys; an
// empty table is {}; error values are {"kind":…,"message":…}.
func jsonEncode(L *lua.LState) int {
	v, err := ToGoAt(L.CheckAny(1), "json.encode")
	if err != nil {
		return ReturnError(L, err)
	}
	j, err := jsonable(v)
	if err != nil {
		return ReturnError(L, err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(j); err != nil {
		return ReturnError(L, value.NewError(value.KindInvalid, "json.encode: %v", err))
	}
	L.Push(lua.LString(bytes.TrimSuffix(b.Bytes(), []byte("\n"))))
	return 1
}

func jsonable(v any) (any, error) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, value.NewError(value.KindInvalid, "json.encode: %v has no JSON form", x)
		}
		return x, nil
	case []any:
		for i, e := range x {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			x[i] = j
		}
		return x, nil
	case map[string]any:
		for k, e := range x {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			x[k] = j
		}
		return x, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			var ks string
			switch kk := k.(type) {
			case string:
				ks = kk
			case float64:
				ks = strconv.FormatFloat(kk, 'f', -1, 64)
			case bool:
				ks = strconv.FormatBool(kk)
			default:
				return nil, value.NewError(value.KindInvalid, "json.encode: a %T key has no JSON form", k)
			}
			if _, dup := out[ks]; dup {
				// {[1] = "a", ["1"] = "b"}: one would silently replace the other.
				return nil, value.NewError(value.KindInvalid, "json.encode: two keys become the object key %q", ks)
			}
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[ks] = j
		}
		return out, nil
	case *value.Error:
		m := map[string]any{"kind": string(x.Kind), "message": x.Message}
		if x.Errors != nil {
			list := make([]any, len(x.Errors))
			for i, e := range x.Errors {
				list[i], _ = jsonable(e)
			}
			m["errors"] = list
		}
		return m, nil
	}
	return v, nil
}

// jsonDecode decodes one JSON value; malformed input is nil, err (invalid)
// with the offset of the problem.
func jsonDecode(L *lua.LState) int {
	s := L.CheckString(1)
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		if se, ok := err.(*json.SyntaxError); ok {
			return ReturnError(L, value.NewError(value.KindInvalid, "json.decode: at offset %d: %v", se.Offset, se))
		}
		return ReturnError(L, value.NewError(value.KindInvalid, "json.decode: %v", err))
	}
	lv, err := ToLua(L, v)
	if err != nil {
		return ReturnError(L, fmt.Errorf("json.decode: %w", err))
	}
	L.Push(lv)
	return 1
}
