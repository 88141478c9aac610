package lua

import (
	"math"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// ToGo copies a Lua value into the value model (see package value): nil,
// bool, float64, string, []any for a sequence 1..n, map[string]any for a
// table with only string keys (and for an empty table), map[any]any for
// mixed keys, *value.Error for an error value. Functions, userdata,
// channels, cycles and tables nested deeper than value.MaxDepth are an
// invalid error naming where they sit. The result shares nothing with L.
func ToGo(lv lua.LValue) (any, error) {
	c := toGo{base: "value"}
	return c.conv(lv, 0)
}

// ToGoAt is ToGo with the name of the value for error messages ("payload",
// "args[2]").
func ToGoAt(lv lua.LValue, what string) (any, error) {
	c := toGo{base: what}
	return c.conv(lv, 0)
}

// ToGoRecordAt is ToGoAt for an asker that takes value.Records
// (process.Message.AcceptsRecord): a table with only string keys, at any
// depth, is a value.Record of its fields, the same Value as its
// map[string]any without building the map.
func ToGoRecordAt(lv lua.LValue, what string) (any, error) {
	c := toGo{base: what, records: true}
	return c.conv(lv, 0)
}

// maxRepeatedValues bounds what copying the same table again (a table
// reachable by several paths) may add to a copy. A table is copied once per
// path that reaches it, so a few dozen tables that each hold the previous
// one twice ({t, t}) would otherwise copy into billions of values: a hang
// that terminate cannot interrupt (no Lua runs during the copy) and a heap
// that takes the whole runtime down.
const maxRepeatedValues = 1 << 20

type toGo struct {
	// tables seen so far: onPath while its copy is being made (a cycle if
	// met again), then the number of values its copy held. The first few
	// are kept in few, the rest in seen: most values hold a few tables,
	// and a map would be most of what copying them allocates.
	few      [8]seenTable
	nfew     int
	seen     map[*lua.LTable]int
	n        int // values copied
	repeated int // values copied again for tables met a second time
	replay   int // > 0 while copying a table met before

	// The place of the value being copied (see place): base, then depth
	// steps, the first few in steps, the rest in more.
	base  string
	steps [8]step
	more  []step
	depth int

	records bool // string-keyed tables become value.Fields (ToGoRecordAt)
}

type seenTable struct {
	t    *lua.LTable
	size int
}

func (c *toGo) lookup(t *lua.LTable) (int, bool) {
	for i := range c.nfew {
		if c.few[i].t == t {
			return c.few[i].size, true
		}
	}
	size, ok := c.seen[t]
	return size, ok
}

func (c *toGo) mark(t *lua.LTable, size int) {
	for i := range c.nfew {
		if c.few[i].t == t {
			c.few[i].size = size
			return
		}
	}
	if c.nfew < len(c.few) {
		c.few[c.nfew] = seenTable{t, size}
		c.nfew++
		return
	}
	if c.seen == nil {
		c.seen = make(map[*lua.LTable]int, 4)
	}
	c.seen[t] = size
}

// step is one step down to the value being copied, for the place an
// error names (base.key, base[2], base[key]): a mixed table's key (key,
// when set), a list's element (index, from 1) or a record's field (name). Steps are kept as
// the copy goes down and made into a string only for an error.
type step struct {
	name  string
	index int
	key   lua.LValue
}

// down records the step to the value copied next; up drops it.
func (c *toGo) down(s step) {
	if c.depth < len(c.steps) {
		c.steps[c.depth] = s
	} else {
		c.more = append(c.more[:c.depth-len(c.steps)], s)
	}
	c.depth++
}

func (c *toGo) up() { c.depth-- }

// place names the value being copied: base, then each step.
func (c *toGo) place() string {
	var b strings.Builder
	b.WriteString(c.base)
	for i := range c.depth {
		var s step
		if i < len(c.steps) {
			s = c.steps[i]
		} else {
			s = c.more[i-len(c.steps)]
		}
		switch {
		case s.key != nil:
			b.WriteString("[" + s.key.String() + "]")
		case s.index > 0:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		default:
			b.WriteString("." + s.name)
		}
	}
	return b.String()
}

const onPath = -1

func (c *toGo) conv(lv lua.LValue, depth int) (any, error) {
	c.n++
	switch v := lv.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(v), nil
	case lua.LNumber:
		return numberValue(float64(v)), nil
	case lua.LString:
		return lua.AnyString(lv), nil // shares lv's box: no copy of it
	case *lua.LTable:
		return c.table(v, depth)
	case *lua.LUserData:
		if e, ok := v.Value.(*value.Error); ok {
			cp, err := value.Copy(e)
			if err != nil {
				return nil, err
			}
			return cp, nil
		}
		if _, ok := v.Value.(*Channel); ok {
			return nil, value.NewError(value.KindInvalid, "%s: a channel cannot cross a process boundary", c.place())
		}
		return nil, value.NewError(value.KindInvalid, "%s: userdata cannot cross a process boundary", c.place())
	case *lua.LFunction:
		return nil, value.NewError(value.KindInvalid, "%s: a function cannot cross a process boundary", c.place())
	case *lua.LState:
		return nil, value.NewError(value.KindInvalid, "%s: a coroutine cannot cross a process boundary", c.place())
	}
	return nil, value.NewError(value.KindInvalid, "%s: a %s cannot cross a process boundary", c.place(), lv.Type())
}

// smallNumbers are the integers 0 to 1023 as Go values, boxed once: a
// status, a count or an index copied from Lua costs no allocation.
var smallNumbers = func() (ns [1024]any) {
	for i := range ns {
		ns[i] = float64(i)
	}
	return ns
}()

func numberValue(f float64) any {
	if i := int(f); f >= 0 && f < float64(len(smallNumbers)) && float64(i) == f && !math.Signbit(f) {
		return smallNumbers[i]
	}
	return f
}

func (c *toGo) table(t *lua.LTable, depth int) (any, error) {
	if depth >= value.MaxDepth {
		return nil, value.NewError(value.KindInvalid, "%s: nested deeper than %d levels", c.place(), value.MaxDepth)
	}
	size, met := c.lookup(t)
	switch {
	case met && size == onPath:
		return nil, value.NewError(value.KindInvalid, "%s: cycle: a table contains itself", c.place())
	case met:
		// Copied before, completely, so it holds no cycle: copy it again
		// (copies share nothing), within the budget. Tables inside it were
		// counted in its size.
		if c.replay == 0 {
			c.repeated += size
			if c.repeated > maxRepeatedValues {
				return nil, value.NewError(value.KindInvalid, "%s: tables shared within the value would copy into more than %d values", c.place(), maxRepeatedValues)
			}
		}
		c.replay++
		defer func() { c.replay-- }()
	default:
		c.mark(t, onPath)
		start := c.n
		defer func() { c.mark(t, c.n-start) }()
	}

	var err error
	if n, ok := t.StringKeyed(); ok {
		// A record (most tables a script sends) or an empty table: no pass
		// to count its keys and their kinds.
		if c.records {
			return c.record(t, n, depth)
		}
		out := make(map[string]any, n)
		t.ForEachString(func(k string, lv lua.LValue) {
			if err != nil {
				return
			}
			out[k], err = c.at(step{name: k}, lv, depth)
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	// An array, or a table of mixed keys.
	n := t.Len()
	count := 0
	t.ForEach(func(lua.LValue, lua.LValue) { count++ })
	if n == count {
		out := make([]any, n)
		for i := 1; i <= n; i++ {
			v, err := c.at(step{index: i}, t.RawGetInt(i), depth)
			if err != nil {
				return nil, err
			}
			out[i-1] = v
		}
		return out, nil
	}
	out := make(map[any]any, count)
	t.ForEach(func(k, lv lua.LValue) {
		if err != nil {
			return
		}
		var gk any
		switch kk := k.(type) {
		case lua.LString:
			gk = string(kk)
		case lua.LNumber:
			gk = float64(kk)
		case lua.LBool:
			gk = bool(kk)
		default:
			err = value.NewError(value.KindInvalid, "%s: a %s cannot be a table key across a process boundary", c.place(), k.Type())
			return
		}
		out[gk], err = c.at(step{key: k}, lv, depth)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// A table with only string keys copied as a value.Record (ToGoRecordAt)
// is a value.Fields and room for its fields in one allocation, sized for
// them (up to eight: 64 bytes for one field, 128 for three), where a map of
// as many is two and about twice the bytes.
type sizedFields[A any] struct {
	fs    value.Fields
	array A
}

// newFields returns empty Fields with room for n in one allocation (two
// past eight).
func newFields(n int) *value.Fields {
	switch n {
	case 0:
		return &value.Fields{}
	case 1:
		b := new(sizedFields[[1]value.Field])
		b.fs = b.array[:0]
		return &b.fs
	case 2:
		b := new(sizedFields[[2]value.Field])
		b.fs = b.array[:0]
		return &b.fs
	case 3:
		b := new(sizedFields[[3]value.Field])
		b.fs = b.array[:0]
		return &b.fs
	case 4:
		b := new(sizedFields[[4]value.Field])
		b.fs = b.array[:0]
		return &b.fs
	case 5:
		b := new(sizedFields[[5]value.Field])
		b.fs = b.array[:0]
		return &b.fs
	case 6:
		b := new(sizedFields[[6]value.Field])
		b.fs = b.array[:0]
		return &b.fs
	case 7:
		b := new(sizedFields[[7]value.Field])
		b.fs = b.array[:0]
		return &b.fs
	case 8:
		b := new(sizedFields[[8]value.Field])
		b.fs = b.array[:0]
		return &b.fs
	}
	fs := make(value.Fields, 0, n)
	return &fs
}

// record copies t, a table of n string keys, as a value.Record.
func (c *toGo) record(t *lua.LTable, n, depth int) (any, error) {
	out := newFields(n)
	var err error
	t.ForEachString(func(k string, lv lua.LValue) {
		if err != nil {
			return
		}
		var v any
		v, err = c.at(step{name: k}, lv, depth)
		*out = append(*out, value.Field{Key: k, Value: v})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// at copies lv, one step s down from a table at depth.
func (c *toGo) at(s step, lv lua.LValue, depth int) (any, error) {
	c.down(s)
	v, err := c.conv(lv, depth+1)
	c.up()
	return v, err
}

// ToLua builds a Lua value from a Go value of the value model (and a few
// convenient Go types: integers, []string, map[string]string, PIDs as their
// strings, durations as milliseconds, any error as an error value). The
// result is fresh: it shares no table with anything.
func ToLua(L *lua.LState, v any) (lua.LValue, error) {
	return toLua(L, v, 0)
}

func toLua(L *lua.LState, v any, depth int) (lua.LValue, error) {
	if depth > value.MaxDepth {
		return lua.LNil, value.NewError(value.KindInvalid, "value nested deeper than %d levels", value.MaxDepth)
	}
	switch x := v.(type) {
	case nil:
		return lua.LNil, nil
	case bool:
		return lua.LBool(x), nil
	case string:
		// v boxes the string already: the Lua value shares that box.
		return lua.StringValue(v), nil
	case []byte:
		return lua.LString(x), nil
	case float64:
		return lua.LNumber(x), nil
	case float32:
		return lua.LNumber(x), nil
	case int:
		return lua.LNumber(x), nil
	case int8:
		return lua.LNumber(x), nil
	case int16:
		return lua.LNumber(x), nil
	case int32:
		return lua.LNumber(x), nil
	case int64:
		return lua.LNumber(x), nil
	case uint:
		return lua.LNumber(x), nil
	case uint8:
		return lua.LNumber(x), nil
	case uint16:
		return lua.LNumber(x), nil
	case uint32:
		return lua.LNumber(x), nil
	case uint64:
		return lua.LNumber(x), nil
	case time.Duration:
		return lua.LNumber(float64(x) / float64(time.Millisecond)), nil
	case process.PID:
		return PIDValue(x), nil
	case *value.Error:
		if x == nil {
			return lua.LNil, nil
		}
		return ErrorValue(L, x), nil
	case error:
		return ErrorValue(L, value.FromError(x)), nil
	case []any:
		t := L.CreateTable(len(x), 0)
		for i, e := range x {
			lv, err := toLua(L, e, depth+1)
			if err != nil {
				return lua.LNil, err
			}
			// Set by index: Append skips nil, which would move every later
			// element down one place ([1, null, 3] read as {1, 3}).
			t.RawSetInt(i+1, lv)
		}
		return t, nil
	case []string:
		t := L.CreateTable(len(x), 0)
		for _, e := range x {
			t.Append(lua.LString(e))
		}
		return t, nil
	case []process.PID:
		t := L.CreateTable(len(x), 0)
		for _, e := range x {
			t.Append(PIDValue(e))
		}
		return t, nil
	case map[string]any:
		// A record: the table and its keys in one allocation (see the
		// fork's NewRecord).
		r := lua.NewRecord(len(x))
		for k, e := range x {
			lv, err := toLua(L, e, depth+1)
			if err != nil {
				return lua.LNil, err
			}
			r.Set(k, lv)
		}
		return r.Table(), nil
	case value.BoxedRecord:
		// As a Record, with the keys' boxes it holds.
		r := lua.NewKeyedRecord(x.Len())
		for i := range x.Len() {
			k, e := x.FieldBox(i)
			lv, err := toLua(L, e, depth+1)
			if err != nil {
				return lua.LNil, err
			}
			r.SetKey(lua.StringValue(k), lv)
		}
		return r.Table(), nil
	case value.Record:
		// Its fields straight into the record: no map in between.
		r := lua.NewRecord(x.Len())
		for i := range x.Len() {
			k, e := x.Field(i)
			lv, err := toLua(L, e, depth+1)
			if err != nil {
				return lua.LNil, err
			}
			r.Set(k, lv)
		}
		return r.Table(), nil
	case map[string]string:
		r := lua.NewRecord(len(x))
		for k, e := range x {
			r.Set(k, lua.LString(e))
		}
		return r.Table(), nil
	case map[any]any:
		t := L.CreateTable(0, len(x))
		for k, e := range x {
			lk, err := toLua(L, k, depth+1)
			if err != nil {
				return lua.LNil, err
			}
			if lk == lua.LNil {
				return lua.LNil, value.NewError(value.KindInvalid, "nil cannot be a table key")
			}
			if n, ok := lk.(lua.LNumber); ok && math.IsNaN(float64(n)) {
				return lua.LNil, value.NewError(value.KindInvalid, "NaN cannot be a table key")
			}
			lv, err := toLua(L, e, depth+1)
			if err != nil {
				return lua.LNil, err
			}
			t.RawSet(lk, lv)
		}
		return t, nil
	}
	return lua.LNil, value.NewError(value.KindInvalid, "a Go %T cannot be given to Lua", v)
}
