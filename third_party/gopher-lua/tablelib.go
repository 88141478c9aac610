package lua

import (
	"sort"
)

func OpenTable(L *LState) int {
	tabmod := L.RegisterModule(TabLibName, tableFuncs)
	L.Push(tabmod)
	return 1
}

var tableFuncs = map[string]LGFunction{
	"getn":   tableGetN,
	"concat": tableConcat,
	"insert": tableInsert,
	"maxn":   tableMaxN,
	"remove": tableRemove,
	"sort":   tableSort,
}

func tableSort(L *LState) int {
	tbl := L.CheckTable(1)
	sorter := lValueArraySorter{L, nil, tbl.array}
	if L.GetTop() != 1 {
		sorter.Fn = L.CheckFunction(2)
	}
	sort.Sort(sorter)
	return 0
}

func tableGetN(L *LState) int {
	L.Push(LNumber(L.CheckTable(1).Len()))
	return 1
}

// proctor: as Lua 5.1, the largest positive number key, integer or not,
// in the array part or the hash part (upstream: MaxN, the array part's
// only: table.maxn{[1000] = true} was 0).
func tableMaxN(L *LState) int {
	tbl := L.CheckTable(1)
	max := LNumber(tbl.MaxN())
	var dict map[LValue]LValue // proctor: see tableHash
	if tbl.hash != nil {
		dict = tbl.hash.dict
	}
	for k := range dict {
		if n, ok := k.(LNumber); ok && n > max {
			max = n
		}
	}
	L.Push(max)
	return 1
}

// proctor: as Lua 5.1's tremove, a position outside 1..#t removes nothing
// and returns no value.
func tableRemove(L *LState) int {
	tbl := L.CheckTable(1)
	n := tbl.Len()
	pos := L.OptInt(2, n)
	if pos < 1 || pos > n {
		return 0
	}
	L.Push(tbl.removeAt(pos, n))
	return 1
}

func tableConcat(L *LState) int {
	tbl := L.CheckTable(1)
	sep := LString(L.OptString(2, ""))
	i := L.OptInt(3, 1)
	j := L.OptInt(4, tbl.Len())
	if L.GetTop() == 3 {
		if i > tbl.Len() || i < 1 {
			L.Push(emptyLString)
			return 1
		}
	}
	i = intMax(intMin(i, tbl.Len()), 1)
	j = intMin(intMin(j, tbl.Len()), tbl.Len())
	if i > j {
		L.Push(emptyLString)
		return 1
	}
	//TODO should flushing?
	retbottom := L.GetTop()
	for ; i <= j; i++ {
		v := tbl.RawGetInt(i)
		if !LVCanConvToString(v) {
			L.RaiseError("invalid value (%s) at index %d in table for concat", v.Type().String(), i)
		}
		L.Push(v)
		if i != j {
			L.Push(sep)
		}
	}
	L.Push(stringConcat(L, L.GetTop()-retbottom, L.reg.Top()-1))
	return 1
}

// insertBelowOne moves every value t holds at an integer key in pos..#t
// one key up (a key whose lower neighbour holds nothing is cleared), then
// sets t[pos] = v: what the loop of Lua 5.1's tinsert leaves, in time
// proportional to the table's entries.
func insertBelowOne(tbl *LTable, pos int, v LValue) {
	n := tbl.Len()
	type entry struct {
		k int
		v LValue
	}
	var moved []entry
	tbl.ForEach(func(key, val LValue) {
		if f, ok := key.(LNumber); ok {
			if k := int(f); LNumber(k) == f && k >= pos && k <= n {
				moved = append(moved, entry{k, val})
			}
		}
	})
	for _, e := range moved {
		tbl.RawSet(LNumber(e.k), LNil)
	}
	for _, e := range moved {
		tbl.RawSet(LNumber(e.k+1), e.v)
	}
	tbl.RawSet(LNumber(pos), v)
}

func tableInsert(L *LState) int {
	tbl := L.CheckTable(1)
	nargs := L.GetTop()
	if nargs != 2 && nargs != 3 {
		L.RaiseError("wrong number of arguments to 'insert'") // proctor: as Lua 5.1
	}

	if L.GetTop() == 2 {
		tbl.Append(L.Get(2))
		return 0
	}
	pos, v := L.CheckInt(2), L.CheckAny(3)
	if pos < 1 {
		// proctor: as Lua 5.1's tinsert, the elements from pos to #t move
		// up (upstream set t[pos] only): t[i] = t[i-1] for i from #t+1
		// down to pos+1. Only the keys the table holds in pos..#t are
		// visited, not every integer between: table.insert(t, -math.huge,
		// v) (pos is the most negative int) looped 2^63 times, in a Go call
		// nothing could stop.
		insertBelowOne(tbl, pos, v)
		return 0
	}
	tbl.Insert(pos, v)
	return 0
}

//
