package lua

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/value"
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
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		attrs = logFields(L.CheckTable(2))
	}
	// The message is cut by the logger's backstop (logging.Clip).
	lg.LogAttrs(context.Background(), level, msg, attrs...)
	return 0
}

// What one log line holds of a script's fields: MaxLogFieldBytes in all
// (keys, strings, and a few bytes for each other value), tables
// MaxLogFieldDepth levels deep. Past that, strings are cut with
// value.Clip's marker, a table's further entries are left out and counted,
// and a deeper table is a string saying so. A script's table may hold a
// million entries and nest 200 levels: logged whole, one line could be
// hundreds of megabytes.
const (
	MaxLogFieldBytes = logging.MaxValueSize
	MaxLogFieldDepth = 8
)

// lineKeys are the keys every line already carries: the handler's own
// (time, level, msg) and the process's tags (entry, pid). A script's field
// of one of these names is written as fields.NAME, so that a JSON line
// never holds one key twice and no script can pass its field for the
// line's own pid or entry.
var lineKeys = map[string]bool{
	slog.TimeKey: true, slog.LevelKey: true, slog.MessageKey: true, slog.SourceKey: true,
	"entry": true, "pid": true,
}

// logFields converts the fields table of a log call, its keys sorted,
// within one budget for the whole line.
func logFields(t *lua.LTable) []slog.Attr {
	type field struct {
		k string
		v lua.LValue
	}
	var fs []field
	t.ForEach(func(k, v lua.LValue) { fs = append(fs, field{k.String(), v}) })
	sort.Slice(fs, func(i, j int) bool { return fs[i].k < fs[j].k })
	c := logClip{left: MaxLogFieldBytes}
	attrs := make([]slog.Attr, 0, min(len(fs), 64))
	for i, f := range fs {
		if c.left <= 0 {
			attrs = append(attrs, slog.String("fields_cut", fmt.Sprintf("%d of %d fields cut", len(fs)-i, len(fs))))
			break
		}
		c.left -= 2 // " " and "="
		k := c.str(f.k)
		if lineKeys[k] {
			k = "fields." + k
		}
		attrs = append(attrs, slog.Any(k, c.value(f.v, 1)))
	}
	return attrs
}

// logClip copies Lua values for a log line, spending left bytes.
type logClip struct{ left int }

// str returns s, cut to what is left (value.Clip, which says how much was
// cut), and spends it.
func (c *logClip) str(s string) string {
	if len(s) > c.left {
		s = value.Clip(s, max(c.left, 0))
	}
	c.left -= max(len(s), 1)
	return s
}

// value renders a Lua value for a log field: plain values as they are,
// error values by their text, tables as structures (a sequence as a list,
// anything else keyed by the keys' text), anything else by its string
// form.
func (c *logClip) value(v lua.LValue, depth int) any {
	switch x := v.(type) {
	case lua.LString:
		return c.str(string(x))
	case lua.LNumber:
		c.left -= 8
		return float64(x)
	case lua.LBool:
		c.left -= 5
		return bool(x)
	case *lua.LNilType:
		c.left -= 3
		return nil
	}
	if e, ok := AsError(v); ok {
		return c.str(value.ClipError(e))
	}
	t, ok := v.(*lua.LTable)
	if !ok {
		return c.str(v.String())
	}
	if depth >= MaxLogFieldDepth {
		return c.str(fmt.Sprintf("%s (nested deeper than %d levels: not logged)", t.String(), MaxLogFieldDepth))
	}
	c.left -= 2
	n, count := t.Len(), 0
	t.ForEach(func(lua.LValue, lua.LValue) { count++ })
	cut := func(copied int) string {
		return fmt.Sprintf("... (%d of %d entries cut)", count-copied, count)
	}
	if n == count && n > 0 {
		out := make([]any, 0, min(n, 64))
		for i := 1; i <= n; i++ {
			if c.left <= 0 {
				return append(out, cut(i-1))
			}
			c.left-- // a separator
			out = append(out, c.value(t.RawGetInt(i), depth+1))
		}
		return out
	}
	out := make(map[string]any, min(count, 64))
	copied := 0
	for k, lv := t.Next(lua.LNil); k != lua.LNil; k, lv = t.Next(k) {
		if c.left <= 0 {
			out["..."] = cut(copied)
			break
		}
		c.left -= 2 // a separator and a colon
		out[c.str(k.String())] = c.value(lv, depth+1)
		copied++
	}
	return out
}

// luaPrint writes its arguments, tab-separated, as one line to stdout.
// A line past MaxPrintBytes is cut.
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
	line := strings.Join(parts, "\t")
	// What reaches stdout is bounded as a log line is: one print writes at
	// most MaxPrintBytes, the rest cut with value.Clip's marker.
	line = value.Clip(line, MaxPrintBytes) + "\n"
	h := p.host
	h.outMu.Lock()
	_, _ = h.stdout.Write([]byte(line))
	h.outMu.Unlock()
	return 0
}

// MaxPrintBytes is the most one print writes, its newline aside.
const MaxPrintBytes = logging.MaxValueSize
