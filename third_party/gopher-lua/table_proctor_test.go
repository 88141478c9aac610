package lua

import (
	"fmt"
	"math/rand"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// Tests of Proctor's table patches (see PATCHES.md).

// TestFarKeyGoesToHash: t[67000000] = true no longer fills the array part
// with 67 million nils.
func TestFarKeyGoesToHash(t *testing.T) {
	tb := newLTable(0, 0)
	tb.RawSetInt(67000000, LTrue)
	tb.RawSet(LNumber(66000000), LTrue)
	if len(tb.array) != 0 || tb.Entries() != 2 {
		t.Fatalf("array part %d slots, %d entries", len(tb.array), tb.Entries())
	}
	if tb.RawGetInt(67000000) != LTrue || tb.RawGet(LNumber(66000000)) != LTrue || tb.RawGetInt(5) != LNil {
		t.Fatal("far keys are not found")
	}
	if tb.Len() != 0 {
		t.Fatalf("#t = %d", tb.Len())
	}
	n := 0
	for k, _ := tb.Next(LNil); k != LNil; k, _ = tb.Next(k) {
		n++
		if n > 2 {
			t.Fatal("next() does not end")
		}
	}
	if n != 2 {
		t.Fatalf("next() saw %d keys", n)
	}
}

// TestArrayTakesKeysFromHash: keys set out of order end up in the array
// part once it reaches them, so # and ipairs see the whole sequence.
func TestArrayTakesKeysFromHash(t *testing.T) {
	tb := newLTable(0, 0)
	const n = 1000
	for i := n; i >= 1; i-- {
		tb.RawSetInt(i, LNumber(i))
	}
	if len(tb.array) != n || len(tb.hashPart().dict) != 0 {
		t.Fatalf("array %d, hash %d", len(tb.array), len(tb.hashPart().dict))
	}
	if tb.Len() != n {
		t.Fatalf("#t = %d, want %d", tb.Len(), n)
	}
	tb = newLTable(0, 0)
	tb.RawSetInt(500, LString("far"))
	tb.Append(LNumber(1))
	for i := 2; i <= 499; i++ {
		tb.Insert(i, LNumber(i))
	}
	if tb.Len() != 500 || tb.RawGetInt(500) != LString("far") || len(tb.hashPart().dict) != 0 {
		t.Fatalf("#t = %d, t[500] = %v, hash %d", tb.Len(), tb.RawGetInt(500), len(tb.hashPart().dict))
	}
}

// TestTableModel drives tables with random sets, deletes, appends and
// inserts, and compares every read and every traversal with a Go map.
func TestTableModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 300; round++ {
		tb := newLTable(0, 0)
		model := map[LValue]LValue{}
		span := 1 + rng.Intn(400)
		for op := 0; op < 600; op++ {
			var key LValue
			switch rng.Intn(5) {
			case 0:
				key = LString(string(rune('a' + rng.Intn(20))))
			case 1:
				key = LNumber(float64(rng.Intn(span)) + 0.5)
			default:
				key = LNumber(rng.Intn(span) + 1)
			}
			var val LValue = LNumber(op)
			if rng.Intn(4) == 0 {
				val = LNil
			}
			switch rng.Intn(6) {
			case 0:
				if k, ok := key.(LNumber); ok && isArrayKey(k) {
					tb.RawSetInt(int(k), val)
				} else {
					tb.RawSet(key, val)
				}
			case 1:
				if val != LNil {
					// Append writes at the border #t+1 (as t[#t+1] = v).
					key = LNumber(tb.MaxN() + 1)
					tb.Append(val)
				} else {
					tb.RawSet(key, val)
				}
			default:
				tb.RawSet(key, val)
			}
			if val == LNil {
				delete(model, key)
			} else {
				model[key] = val
			}
		}
		for k, v := range model {
			if got := tb.RawGet(k); got != v {
				t.Fatalf("round %d: t[%v] = %v, want %v", round, k, got, v)
			}
			if n, ok := k.(LNumber); ok && isArrayKey(n) && tb.RawGetInt(int(n)) != v {
				t.Fatalf("round %d: RawGetInt(%v) = %v, want %v", round, k, tb.RawGetInt(int(n)), v)
			}
		}
		seen := map[LValue]bool{}
		for k, v := tb.Next(LNil); k != LNil; k, v = tb.Next(k) {
			if seen[k] {
				t.Fatalf("round %d: next() returned %v twice", round, k)
			}
			seen[k] = true
			if model[k] != v {
				t.Fatalf("round %d: next() gave %v = %v, want %v", round, k, v, model[k])
			}
		}
		if len(seen) != len(model) {
			t.Fatalf("round %d: next() saw %d keys, the table holds %d", round, len(seen), len(model))
		}
		// # is a border: t[n] ~= nil (or n == 0) and t[n+1] == nil.
		n := tb.Len()
		if (n > 0 && model[LNumber(n)] == nil) || model[LNumber(n+1)] != nil {
			t.Fatalf("round %d: #t = %d is not a border", round, n)
		}
		for k := range tb.hashPart().dict {
			if n, ok := k.(LNumber); ok && isArrayKey(n) && int(n) <= len(tb.array)+1 {
				t.Fatalf("round %d: hash part holds %v, array part has %d slots", round, k, len(tb.array))
			}
		}
	}
}

// TestDeletedKeysAreDropped: a map that sees ever new keys, each deleted
// again, keeps a bounded key order.
func TestDeletedKeysAreDropped(t *testing.T) {
	tb := newLTable(0, 0)
	for i := 0; i < 100000; i++ {
		tb.RawSetString(string(rune(i)), LTrue)
		tb.RawSetH(LNumber(float64(i)+0.5), LTrue)
		tb.RawSetString(string(rune(i)), LNil)
		tb.RawSetH(LNumber(float64(i)+0.5), LNil)
	}
	if len(tb.hashPart().keys) > 200 || len(tb.hashPart().k2i) > 200 {
		t.Fatalf("%d keys kept for an empty table", len(tb.hashPart().keys))
	}
}

// TestSmallTableHasNoKeyIndex: a table with up to smallKeys keys in its
// hash part finds next()'s key by a scan, without a second map; past that
// it indexes them. Traversal sees every key once either way, across the
// switch, with keys deleted and set again.
func TestSmallTableHasNoKeyIndex(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		tb := newLTable(0, 0)
		tb.RawSetString("main", LTrue)
	})
	// The table, its string map and its group, the key order's array.
	if allocs > 4 {
		t.Fatalf("a table with one field allocates %.0f times", allocs)
	}
	tb := newLTable(0, 0)
	model := map[LValue]LValue{}
	set := func(k, v LValue) {
		tb.RawSetH(k, v)
		if v == LNil {
			delete(model, k)
		} else {
			model[k] = v
		}
	}
	check := func(step string) {
		t.Helper()
		seen := map[LValue]bool{}
		for k, v := tb.Next(LNil); k != LNil; k, v = tb.Next(k) {
			if seen[k] || model[k] != v {
				t.Fatalf("%s: next() gave %v = %v (seen before: %v)", step, k, v, seen[k])
			}
			seen[k] = true
		}
		if len(seen) != len(model) {
			t.Fatalf("%s: next() saw %d keys, the table holds %d", step, len(seen), len(model))
		}
	}
	// proctor: string keys are in the list, not the key order, until
	// the table has more than smallStrKeys of them (patch 72): the key
	// order is of the other keys.
	for i := range smallKeys - 1 {
		set(LNumber(float64(i)+0.5), LNumber(i))
	}
	set(LString("s"), LTrue)
	set(LTrue, LTrue)
	if tb.hashPart().k2i != nil || len(tb.hashPart().keys) != smallKeys {
		t.Fatalf("a table with %d keys in its order has an index", len(tb.hashPart().keys))
	}
	check("small")
	set(LNumber(3.5), LNil)
	set(LNumber(3.5), LNumber(33))
	if len(tb.hashPart().keys) != smallKeys || tb.hashPart().k2i != nil {
		t.Fatalf("a key set again was added again: %d keys", len(tb.hashPart().keys))
	}
	check("set again")
	set(LNumber(100.5), LTrue)
	if tb.hashPart().k2i == nil || len(tb.hashPart().k2i) != len(tb.hashPart().keys) {
		t.Fatalf("a table with %d keys has no full index (%d)", len(tb.hashPart().keys), len(tb.hashPart().k2i))
	}
	check("indexed")
	for i := range 100 {
		set(LString(fmt.Sprint("x", i)), LNumber(i))
	}
	for i := range 100 {
		set(LString(fmt.Sprint("x", i)), LNil)
	}
	check("after deletes")
}

// TestNextFromAKeyNotInTheTable: next() goes on from nil, a key of the
// table or one cleared during the traversal, including the last element
// of the array part removed by table.remove (which shrinks it): the hash
// part then follows from its first key, none skipped. Any other key is
// an error, as in Lua, not a silent start from the second key of the hash
// part's order. Both with a small table (no key index) and a larger one.
func TestNextFromAKeyNotInTheTable(t *testing.T) {
	for _, src := range []string{
		// table.remove of the last element during a traversal
		`local t = {1, 2, 3, a = 1, b = 2, c = 3}
		 local seen = {}
		 for k in pairs(t) do seen[#seen+1] = tostring(k); if k == 3 then table.remove(t) end end
		 assert(table.concat(seen, " ") == "1 2 3 a b c", table.concat(seen, " "))`,
		`local t = {1, 2, 3}
		 for i = 1, 12 do t["k" .. i] = i end
		 local n = 0
		 for k in pairs(t) do n = n + 1; if k == 3 then table.remove(t); table.remove(t) end end
		 assert(n == 15, n)`,
		// keys 300..66 went to the hash part and then into the array part;
		// removing the last element must not resume the hash part where
		// 300 used to be (after all of s1..s200)
		`local t = {x = 1}
		 for i = 1, 200 do t["s" .. i] = i end
		 for i = 300, 1, -1 do t[i] = i end
		 t.y = 2
		 local n = 0
		 for k in pairs(t) do if type(k) == "string" then n = n + 1 end; if k == 300 then table.remove(t) end end
		 assert(n == 202, n)`,
		// fields cleared during a traversal, across the key-index threshold
		`for size = 1, 20 do
		   local t = {}
		   for i = 1, size do t["k" .. i] = i end
		   local n = 0
		   for k in pairs(t) do n = n + 1; t[k] = nil end
		   assert(n == size and next(t) == nil, size)
		 end`,
		// a key not in the table
		`for _, t in ipairs({{a = 1, b = 2, c = 3}, {1, 2, 3, a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8, i = 9}}) do
		   for _, k in ipairs({"zz", 0, -1, 2.5, true}) do
		     local ok, err = pcall(next, t, k)
		     assert(not ok and err:find("invalid key to 'next'", 1, true), tostring(k) .. ": " .. tostring(err))
		   end
		   local ok, err = pcall(function() for k in pairs(t) do t.zz = nil end end)
		   assert(ok, err)
		 end`,
	} {
		L := NewState()
		if err := L.DoString(src); err != nil {
			t.Errorf("%s\n%v", src, err)
		}
		L.Close()
	}
}

// TestTraversalWithDeletionsVisitsEveryKey: random tables (string keys,
// integers in and far past the array part, keys moved into it) traversed
// with pairs while the body clears the current key, other keys, removes
// the last element with table.remove or overwrites a field: every key
// there at the start and not cleared is visited once, and no other.
// Before patch 24 the fourth table already missed a key.
func TestTraversalWithDeletionsVisitsEveryKey(t *testing.T) {
	L := NewState()
	defer L.Close()
	err := L.DoString(`
local seed = 7
local function rnd(n) seed = (seed * 16807) % 2147483647; return math.floor(seed / 7) % n end
for round = 1, 200 do
  local t = {}
  for j = 1, rnd(40) do
    local c = rnd(4)
    if c == 0 then local k = "s" .. rnd(30); t[k] = k
    elseif c == 1 then local k = rnd(300) + 1; t[k] = k
    elseif c == 2 then local k = rnd(12) + 1; t[k] = k
    else t[rnd(80) + 1] = nil end
  end
  if rnd(2) == 0 then for i = rnd(100) + 60, 1, -1 do if rnd(3) > 0 then t[i] = i end end end
  local present, deleted, visited = {}, {}, {}
  for k in pairs(t) do present[k] = true end
  for k in pairs(t) do
    assert(present[k] and not visited[k], round .. ": " .. tostring(k) .. " visited twice or never there")
    visited[k] = true
    local c = rnd(5)
    if c == 0 then t[k] = nil; deleted[k] = true
    elseif c == 1 then local r = table.remove(t); if r ~= nil then deleted[r] = true end
    elseif c == 2 then local o = next(present) if t[o] ~= nil then t[o] = "re" end
    elseif c == 3 then for o in pairs(present) do if rnd(4) == 0 then t[o] = nil; deleted[o] = true end end
    end
  end
  for k in pairs(present) do
    assert(visited[k] or deleted[k], round .. ": " .. tostring(k) .. " missed")
  end
end`)
	if err != nil {
		t.Fatal(err)
	}
}

// TestForEachVisitsTheKeyOrder: ForEach visits every key of the array and
// hash parts once, skipping cleared keys and the holes keys moved to the
// array part leave, after keys are cleared, set again and moved; and it
// allocates nothing for a table of string keys.
func TestForEachVisitsTheKeyOrder(t *testing.T) {
	tb := newLTable(0, 4)
	want := map[LValue]LValue{}
	set := func(k, v LValue) {
		tb.RawSet(k, v)
		if v == LNil {
			delete(want, k)
		} else {
			want[k] = v
		}
	}
	for i := 0; i < 20; i++ {
		set(LString(fmt.Sprintf("k%d", i)), LNumber(i))
	}
	set(LNumber(3), LTrue) // hash part, then moved to the array part
	set(LNumber(2), LTrue)
	set(LNumber(1), LTrue)
	set(LNumber(1.5), LString("x"))
	set(LTrue, LString("b"))
	set(LString("k3"), LNil)
	set(LString("k4"), LNil)
	set(LString("k4"), LNumber(44))
	got := map[LValue]LValue{}
	tb.ForEach(func(k, v LValue) {
		if _, dup := got[k]; dup {
			t.Errorf("key %v visited twice", k)
		}
		got[k] = v
	})
	if len(got) != len(want) {
		t.Errorf("visited %d keys, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("key %v: %v, want %v", k, got[k], v)
		}
	}
	if len(tb.array) != 3 {
		t.Errorf("array part %d, want the 3 keys moved", len(tb.array))
	}

	fields := newLTable(0, 5)
	for _, k := range []string{"method", "path", "body", "headers", "query"} {
		fields.RawSetString(k, LString(k))
	}
	n := 0
	if a := testing.AllocsPerRun(100, func() { fields.ForEach(func(LValue, LValue) { n++ }) }); a != 0 {
		t.Errorf("ForEach over 5 string keys: %.0f allocations", a)
	}
}

// TestSizedTableGrowsNoKeyOrder: a table made for n fields takes n string
// keys with no allocation past the map's own.
func TestSizedTableGrowsNoKeyOrder(t *testing.T) {
	keys := []string{"method", "path", "params", "query", "headers", "body", "remote"}
	vals := make([]LValue, len(keys))
	for i, k := range keys {
		vals[i] = LString(k)
	}
	a := testing.AllocsPerRun(100, func() {
		tb := newLTable(0, len(keys))
		for i, k := range keys {
			tb.RawSetString(k, vals[i])
		}
	})
	// The table, its map (and the map's group), the key order, and one
	// LString per key: the key order is not grown.
	if want := 4.0 + float64(len(keys)); a > want {
		t.Errorf("%.0f allocations, want at most %.0f", a, want)
	}
	// A large hint is a guess (NewTable, the globals): no key order is
	// made for it before keys come.
	for _, hcap := range []int{defaultHashCap, 64} {
		if c := cap(newLTable(0, hcap).hashPart().keys); c != 0 {
			t.Errorf("newLTable(0, %d): key order of %d made ahead", hcap, c)
		}
	}
}

// A table keeps its first string keys in a list (smallStrKeys) and moves
// them into a map at the one after: lookups, deletes, a new list without
// the deleted keys, Entries and next()'s order are the same on both sides.
func TestSmallStringKeys(t *testing.T) {
	tb := newLTable(0, 0)
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	for i, k := range names[:smallStrKeys] {
		tb.RawSetString(k, LNumber(i))
	}
	if tb.strdict != nil || len(tb.strs) != smallStrKeys {
		t.Fatalf("%d keys: map %v, list %d", smallStrKeys, tb.strdict != nil, len(tb.strs))
	}
	// proctor: a deleted key's entry is reused by the next key added, in
	// place: the list is its keys' order (patch 72), and the boxes next()
	// returned are the keys' own, not the entries'.
	for _, k := range []string{"c", "d", "e", "f"} {
		tb.RawSetString(k, LNil)
	}
	if tb.RawGetString("c") != LNil || tb.RawGet(LString("c")) != LNil || tb.Entries() != smallStrKeys-4 {
		t.Fatalf("deleted key: %v, %d entries", tb.RawGetString("c"), tb.Entries())
	}
	old := tb.strs
	tb.RawSetString("i", LNumber(100))
	if tb.strdict != nil || len(tb.strs) != smallStrKeys || &tb.strs[0] != &old[0] || tb.strs[2].str() != "i" || tb.RawGetString("i") != LNumber(100) {
		t.Fatalf("a key after deletes: map %v, list %d, entry of c %q", tb.strdict != nil, len(tb.strs), tb.strs[2].str())
	}
	order := func() (keys []string) {
		for k, _ := tb.Next(LNil); k != LNil; k, _ = tb.Next(k) {
			keys = append(keys, k.String())
		}
		return keys
	}
	if got := strings.Join(order(), " "); got != "a b i g h" {
		t.Fatalf("next() order %q", got)
	}
	for i, k := range []string{"j", "k", "l"} {
		tb.RawSetString(k, LNumber(200+i))
	}
	tb.RawSetString("g", LNil)
	tb.RawSetString("g", LNumber(6))
	before := strings.Join(order(), " ")
	tb.RawSetString("m", LNumber(300)) // the ninth live key: a map
	if tb.strdict == nil || tb.strs != nil {
		t.Fatal("nine keys are still in a list")
	}
	if got := strings.Join(order(), " "); got != before+" m" || before != "a b i j k l g h" {
		t.Fatalf("next() order %q, want %q", got, before+" m")
	}
	for i, k := range names[:smallStrKeys] {
		want := LValue(LNumber(i))
		if strings.Contains("cdef", k) {
			want = LNil
		}
		if got := tb.RawGetH(LString(k)); got != want {
			t.Fatalf("%s = %v, want %v", k, got, want)
		}
	}
	if tb.Entries() != 9 {
		t.Fatalf("%d entries, want %d", tb.Entries(), 9)
	}
	n := 0
	tb.ForEach(func(LValue, LValue) { n++ })
	if n != 9 {
		t.Fatalf("ForEach saw %d keys", n)
	}
	// A constructor's hint of a few keys makes a list, not a map.
	if c := newLTable(0, 3); c.strdict != nil || cap(c.strs) != 3 {
		t.Fatal("newLTable(0, 3) made a map")
	}
}

// TestStringKeyed: StringKeyed says whether a table holds string keys
// only and how many, and ForEachString visits exactly those that hold a
// value, whether the table keeps them in its list or its map, after
// deletes too.
func TestStringKeyed(t *testing.T) {
	L := NewState()
	defer L.Close()
	for _, tc := range []struct {
		src  string
		n    int
		ok   bool
		keys string
	}{
		{`return {}`, 0, true, ""},
		{`return {a = 1, b = 2}`, 2, true, "a,b"},
		{`local t = {a = 1, b = 2, c = 3}; t.b = nil; return t`, 2, true, "a,c"},
		{`local t = {}; for i = 1, 20 do t["k" .. i] = i end; for i = 2, 20 do t["k" .. i] = nil end; return t`, 1, true, "k1"},
		{`local t = {1, a = 1}; t[1] = nil; return t`, 1, true, "a"},
		{`return {1, a = 1}`, 0, false, ""},
		{`return {[true] = 1, a = 1}`, 0, false, ""},
		{`return {[2.5] = 1}`, 0, false, ""},
	} {
		if err := L.DoString(tc.src); err != nil {
			t.Fatal(err)
		}
		tb := L.Get(-1).(*LTable)
		L.Pop(1)
		n, ok := tb.StringKeyed()
		if n != tc.n || ok != tc.ok {
			t.Errorf("%s: StringKeyed %d, %v; want %d, %v", tc.src, n, ok, tc.n, tc.ok)
		}
		if !ok {
			continue
		}
		var keys []string
		tb.ForEachString(func(k string, v LValue) {
			if v == LNil || tb.RawGetString(k) != v {
				t.Errorf("%s: %s = %v", tc.src, k, v)
			}
			keys = append(keys, k)
		})
		sort.Strings(keys)
		if got := strings.Join(keys, ","); got != tc.keys {
			t.Errorf("%s: ForEachString visits %s, want %s", tc.src, got, tc.keys)
		}
	}
}

// TestStringListMatchesModel (patches 72, 73): tables driven with random
// sets and deletes of string keys (few and many, so that deleted entries
// are reused, the list moves to the map, or neither) mixed with other keys
// hold what a Go map holds; every traversal sees each live key once, also
// one that assigns to and clears fields as it goes (Lua 5.1 allows both),
// and the keys next() returned keep their strings after the table changed
// (their entries reused by other keys) and a collection ran.
func TestStringListMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewSource(72))
	type held struct {
		box LValue
		s   string
	}
	var kept []held
	for round := 0; round < 3000; round++ {
		tb := newLTable(0, rng.Intn(12))
		model := map[LValue]LValue{}
		nstr := 1 + rng.Intn(16)
		key := func() LValue {
			switch rng.Intn(8) {
			case 0:
				return LNumber(float64(rng.Intn(5)) + 0.5)
			case 1:
				return LNumber(rng.Intn(4) + 1)
			case 2:
				return LTrue
			default:
				return LString(fmt.Sprint("k", rng.Intn(nstr)))
			}
		}
		check := func(step string) {
			t.Helper()
			seen := map[LValue]bool{}
			for k, v := tb.Next(LNil); k != LNil; k, v = tb.Next(k) {
				if seen[k] || model[k] != v {
					t.Fatalf("round %d %s: next() gave %v = %v, want %v (seen %v)", round, step, k, v, model[k], seen[k])
				}
				seen[k] = true
				if s, ok := k.(LString); ok && rng.Intn(4) == 0 {
					kept = append(kept, held{k, string(s)})
				}
			}
			if len(seen) != len(model) {
				t.Fatalf("round %d %s: next() saw %d keys, want %d", round, step, len(seen), len(model))
			}
			n := 0
			tb.ForEach(func(k, v LValue) {
				if model[k] != v {
					t.Fatalf("round %d %s: ForEach gave %v = %v", round, step, k, v)
				}
				n++
			})
			if n != len(model) || tb.Entries() < len(model) {
				t.Fatalf("round %d %s: ForEach saw %d, Entries %d, want %d", round, step, n, tb.Entries(), len(model))
			}
			for k, v := range model {
				if tb.RawGet(k) != v {
					t.Fatalf("round %d %s: t[%v] = %v, want %v", round, step, k, tb.RawGet(k), v)
				}
			}
		}
		for op, ops := 0, rng.Intn(40); op < ops; op++ {
			k := key()
			var v LValue = LNumber(op)
			if rng.Intn(3) == 0 {
				v = LNil
			}
			tb.RawSet(k, v)
			if v == LNil {
				delete(model, k)
			} else {
				model[k] = v
			}
			if rng.Intn(8) == 0 {
				check("ops")
			}
		}
		check("built")
		// A traversal that clears some fields and assigns to others.
		seen := map[LValue]bool{}
		want := len(model)
		for k, _ := tb.Next(LNil); k != LNil; k, _ = tb.Next(k) {
			if seen[k] {
				t.Fatalf("round %d: traversal with clears gave %v twice", round, k)
			}
			seen[k] = true
			if rng.Intn(2) == 0 {
				tb.RawSet(k, LNil)
				delete(model, k)
			} else {
				tb.RawSet(k, LFalse)
				model[k] = LFalse
			}
		}
		if len(seen) != want {
			t.Fatalf("round %d: traversal with clears saw %d keys, want %d", round, len(seen), want)
		}
		check("after clears")
		if round%100 == 0 {
			runtime.GC()
			for _, h := range kept {
				if s := string(h.box.(LString)); s != h.s {
					t.Fatalf("a key next() returned reads %q, was %q", s, h.s)
				}
			}
			kept = kept[:0]
		}
	}
}

// TestNextAllocatesNothing (patch 72): next() over a table's listed
// string keys, set as Go strings, returns the boxes their entries hold.
func TestNextAllocatesNothing(t *testing.T) {
	tb := newLTable(0, 0)
	for _, k := range []string{"status", "headers", "body"} {
		tb.RawSetString(k+"", LTrue)
	}
	n := testing.AllocsPerRun(100, func() {
		for k, _ := tb.Next(LNil); k != LNil; k, _ = tb.Next(k) {
		}
		tb.ForEach(func(LValue, LValue) {})
	})
	if n != 0 {
		t.Fatalf("a traversal allocates %v times", n)
	}
	if tb.hash != nil {
		t.Fatal("a table of string keys made its hash part")
	}
}

// TestKeptKeyKeepsOnlyItsBox (patch 72): a key next() returned, kept
// after its table is dropped, keeps its box and not the table's block
// (with the values its entries hold: here a megabyte).
func TestKeptKeyKeepsOnlyItsBox(t *testing.T) {
	freed := make(chan struct{})
	var kept LValue
	func() {
		tb := newLTable(0, 2) // one block: the table first, then its entries
		tb.RawSetString("body", LString(strings.Repeat("x", 1<<20)))
		tb.RawSetString("path", LString("/"))
		runtime.SetFinalizer(tb, func(*LTable) { close(freed) })
		kept, _ = tb.Next(LNil)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		select {
		case <-freed:
			if kept.String() != "body" {
				t.Fatalf("the kept key reads %q", kept.String())
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("a kept key keeps its table alive")
		}
		time.Sleep(time.Millisecond)
	}
}
