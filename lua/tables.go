package lua

import (
	"sort"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The table functions that can build a large string, grow a table or run
// for a long time respect the limits (see limits.go) and stop when their
// process is asked to stop. They follow Lua 5.1 (ltablib.c).

// wrapTableLib replaces the functions of the shared table table.
func wrapTableLib(L *lua.LState, lib *lua.LTable) {
	insert := lib.RawGetString("insert").(*lua.LFunction).GFunction
	lib.RawSetString("insert", L.NewFunction(func(L *lua.LState) int {
		checkTableSize(L, L.CheckTable(1))
		return insert(L)
	}))
	lib.RawSetString("concat", L.NewFunction(tableConcat))
	lib.RawSetString("sort", L.NewFunction(tableSort))
}

// tableConcat is table.concat(t [, sep [, i [, j]]]): every t[k] for k in
// i..j (default 1..#t) must be a string or a number. The result's size is
// known before it is built.
func tableConcat(L *lua.LState) int {
	t := L.CheckTable(1)
	sep := L.OptString(2, "")
	i := L.OptInt(3, 1)
	j := t.Len()
	if L.Get(4) != lua.LNil {
		j = L.CheckInt(4)
	}
	if i > j {
		L.Push(lua.LString(""))
		return 1
	}
	size := float64(len(sep)) * float64(j-i)
	for k := i; k <= j; k++ {
		if k%checkEvery == 0 {
			checkInterrupt(L)
		}
		v := t.RawGetInt(k)
		if !lua.LVCanConvToString(v) {
			L.RaiseError("invalid value (a %s at index %d) in table for 'concat'", v.Type().String(), k)
		}
		if s, ok := v.(lua.LString); ok {
			size += float64(len(s))
		} else {
			size += float64(len(v.String()))
		}
		checkStringSize(L, "table.concat", size)
	}
	var b strings.Builder
	b.Grow(int(size))
	for k := i; k <= j; k++ {
		if k%checkEvery == 0 {
			checkInterrupt(L)
		}
		if k > i {
			b.WriteString(sep)
		}
		b.WriteString(lua.LVAsString(t.RawGetInt(k)))
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// tableSort is table.sort(t [, comp]): t[1..#t] in place, by comp(a, b)
// or by <.
func tableSort(L *lua.LState) int {
	t := L.CheckTable(1)
	var comp *lua.LFunction
	if L.Get(2) != lua.LNil {
		comp = L.CheckFunction(2)
	}
	n := t.Len()
	s := &sorter{L: L, comp: comp, values: make([]lua.LValue, n)}
	for k := range n {
		s.values[k] = t.RawGetInt(k + 1)
	}
	sort.Sort(s)
	for k, v := range s.values {
		t.RawSetInt(k+1, v)
	}
	return 0
}

type sorter struct {
	L      *lua.LState
	comp   *lua.LFunction
	values []lua.LValue
	steps  int
}

func (s *sorter) Len() int      { return len(s.values) }
func (s *sorter) Swap(i, j int) { s.values[i], s.values[j] = s.values[j], s.values[i] }

func (s *sorter) Less(i, j int) bool {
	if s.steps++; s.steps%checkEvery == 0 {
		checkInterrupt(s.L)
	}
	L := s.L
	if s.comp == nil {
		return L.LessThan(s.values[i], s.values[j])
	}
	L.Push(s.comp)
	L.Push(s.values[i])
	L.Push(s.values[j])
	L.Call(2, 1)
	less := lua.LVAsBool(L.Get(-1))
	L.Pop(1)
	return less
}
