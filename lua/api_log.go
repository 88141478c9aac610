package lua

import (
	"context"
	"log/slog"
	"sort"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// logModule is the global log: lines through the entry's logger, tagged
// with its entry ID and the process's PID.
var logModule = Module{
	Name: "log",
	Doc:  "Structured log lines, tagged with the entry and the PID.",
	Funcs: []Func{
		{Name: "debug", Fn: func(L *lua.LState) int { return logAt(L, slog.LevelDebug) }, Doc: "Logs at debug level, with the fields of an optional table.",
			Params: "message: any, fields?: table"},
		{Name: "info", Fn: func(L *lua.LState) int { return logAt(L, slog.LevelInfo) }, Doc: "Logs at info level, with the fields of an optional table.",
			Params: "message: any, fields?: table"},
		{Name: "warn", Fn: func(L *lua.LState) int { return logAt(L, slog.LevelWarn) }, Doc: "Logs at warn level, with the fields of an optional table.",
			Params: "message: any, fields?: table"},
		{Name: "error", Fn: func(L *lua.LState) int { return logAt(L, slog.LevelError) }, Doc: "Logs at error level, with the fields of an optional table.",
			Params: "message: any, fields?: table"},
	},
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
	size := float64(len(msg))
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		t := L.CheckTable(2)
		t.ForEach(func(k, v lua.LValue) {
			lv := logValue(v)
			size += float64(len(k.String())) + valueSize(lv)
			attrs = append(attrs, slog.Any(k.String(), lv))
		})
		sort.Slice(attrs, func(i, j int) bool { return attrs[i].Key < attrs[j].Key })
	}
	// A log line is a string too: fields that hold one large string many
	// times would otherwise make the handler build a line of gigabytes.
	checkStringSize(L, "log", size)
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

// luaPrint writes its arguments, tab-separated, as one line to stdout.
func luaPrint(L *lua.LState) int {
	p := ProcessOf(L)
	n := L.GetTop()
	parts := make([]string, n)
	size := float64(n)
	for i := 1; i <= n; i++ {
		parts[i-1] = L.ToStringMeta(L.Get(i)).String()
		size += float64(len(parts[i-1]))
	}
	// The line is a string like any other: print(s, s, s, …) of one large
	// string would otherwise build a line of gigabytes.
	checkStringSize(L, "print", size)
	var b strings.Builder
	b.Grow(int(size))
	for i, s := range parts {
		if i > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(s)
	}
	b.WriteByte('\n')
	h := p.host
	h.outMu.Lock()
	_, _ = h.stdout.Write([]byte(b.String()))
	h.outMu.Unlock()
	return 0
}
