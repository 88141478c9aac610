package lua

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
)

// Tests of NewRecord and StringValue (see PATCHES.md, patch 49).

// TestRecordMatchesRawSetString: a table built with a Record holds the
// same keys and values, in the same next() order, as one built with
// RawSetString from the same sets (keys set twice, deleted, set again,
// more keys than the Record was made for), and its keys still read right
// after collections (the boxes live in the Record's block).
func TestRecordMatchesRawSetString(t *testing.T) {
	rng := rand.New(rand.NewSource(26))
	for round := 0; round < 2000; round++ {
		hint := rng.Intn(12)
		ops := rng.Intn(20)
		r := NewRecord(hint)
		want := newLTable(0, hint)
		for i := 0; i < ops; i++ {
			key := fmt.Sprintf("k%d", rng.Intn(14))
			var v LValue = LNumber(i)
			if rng.Intn(6) == 0 {
				v = LNil
			}
			r.Set(key, v)
			want.RawSetString(key, v)
		}
		got := r.Table()
		runtime.GC()
		if d := diffTables(got, want); d != "" {
			t.Fatalf("round %d (hint %d): %s", round, hint, d)
		}
	}
}

func diffTables(got, want *LTable) string {
	gk, wk := LValue(LNil), LValue(LNil)
	for n := 0; ; n++ {
		var gv, wv LValue
		gk, gv = got.Next(gk)
		wk, wv = want.Next(wk)
		if gk != wk || gv != wv {
			return fmt.Sprintf("next() step %d: %v=%v, want %v=%v", n, gk, gv, wk, wv)
		}
		if gk == LNil {
			break
		}
		if s, ok := gk.(LString); !ok || got.RawGetString(string(s)) != gv {
			return fmt.Sprintf("key %v does not find its value %v", gk, gv)
		}
		if n > 40 {
			return "next() does not end"
		}
	}
	if got.Entries() != want.Entries() || got.Len() != want.Len() {
		return fmt.Sprintf("%d entries, want %d", got.Entries(), want.Entries())
	}
	return ""
}

// TestRecordAllocations: a record of n fresh string keys is one
// allocation up to smallStrKeys keys (RawSetString on a table made by
// newLTable: three, and one more a key); past it, its keys' boxes are one
// slice, not one allocation a key (12 keys: 10 or more fewer).
func TestRecordAllocations(t *testing.T) {
	keys := []string{"method", "path", "params", "query", "headers", "body", "remote", "key", "a", "b", "c", "d"}
	plain := testing.AllocsPerRun(100, func() {
		tb := newLTable(0, len(keys))
		for _, k := range keys {
			tb.RawSetString(k, LTrue)
		}
	})
	for _, tc := range []struct{ n, allocs int }{{1, 1}, {5, 1}, {7, 1}, {8, 1}, {12, int(plain) - 10}} {
		got := testing.AllocsPerRun(100, func() {
			r := NewRecord(tc.n)
			for _, k := range keys[:tc.n] {
				r.Set(k, LTrue)
			}
			if r.Table().RawGetString(keys[0]) != LTrue {
				t.Fatal("lost a field")
			}
		})
		if int(got) != tc.allocs && (tc.n <= smallStrKeys || int(got) > tc.allocs) {
			t.Errorf("%d keys: %v allocations, want %d", tc.n, got, tc.allocs)
		}
	}
}

// TestStringValue: the value shares the box of the Go value and reads as
// the same string; a value that is not a string panics.
func TestStringValue(t *testing.T) {
	for _, s := range []string{"", "x", "GET", "a longer string with spaces"} {
		var v any = s + "" // boxed at run time
		var lv LValue
		if n := testing.AllocsPerRun(100, func() { lv = StringValue(v) }); n != 0 {
			t.Errorf("%q: %v allocations", s, n)
		}
		if got, ok := lv.(LString); !ok || string(got) != s || lv.String() != s {
			t.Errorf("StringValue(%q) = %#v", s, lv)
		}
		if lv != LValue(LString(s)) {
			t.Errorf("StringValue(%q) does not equal LString(%q)", s, s)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("StringValue(1) did not panic")
		}
	}()
	StringValue(1)
}

// TestAnyString: the Go value shares the box of the Lua string and reads
// as the same string, also for a Record's key (whose box is in the
// Record's block) after a collection; a value that is not a string
// panics.
func TestAnyString(t *testing.T) {
	r := NewRecord(2)
	r.Set("first", LTrue)
	r.Set("second"+fmt.Sprint(2), LTrue)
	key, _ := r.Table().Next(LNil)
	for _, lv := range []LValue{LString(""), LString(fmt.Sprint("run", "time")), key} {
		var v any
		if n := testing.AllocsPerRun(100, func() { v = AnyString(lv) }); n != 0 {
			t.Errorf("%v: %v allocations", lv, n)
		}
		runtime.GC()
		if s, ok := v.(string); !ok || s != string(lv.(LString)) {
			t.Errorf("AnyString(%q) = %#v", lv, v)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("AnyString(LTrue) did not panic")
		}
	}()
	AnyString(LTrue)
}

// TestConstructorAllocations: a table constructor with a few string keys
// ({status = 200, body = b}) is one allocation: the table, its entries
// and key order are one block, and its keys are the function's constants'
// boxes. It was three, and one a key.
func TestConstructorAllocations(t *testing.T) {
	L := NewState()
	defer L.Close()
	for _, tc := range []struct {
		src    string
		allocs float64
	}{
		{`local b = ... ; return {status = 200, body = b, ["x-echo"] = "yes"}`, 1},
		{`return {a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8}`, 1},
	} {
		fn, err := L.LoadString(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		var got LValue
		a := testing.AllocsPerRun(100, func() {
			L.Push(fn)
			L.Push(LString("body"))
			L.Call(1, 1)
			got = L.Get(-1)
			L.Pop(1)
		})
		if a != tc.allocs {
			t.Errorf("%s: %v allocations, want %v", tc.src, a, tc.allocs)
		}
		tb := got.(*LTable)
		n := 0
		tb.ForEach(func(k, v LValue) { n++ })
		if n != tb.Entries() || n < 3 {
			t.Errorf("%s: %d keys, %d entries", tc.src, n, tb.Entries())
		}
	}
}

// TestKeyedRecordMatchesRawSetString: a table built with SetKey (and Set
// among them) on a NewKeyedRecord holds what RawSetString builds from the
// same sets, in the same next() order, after collections; its key order
// holds the boxes given.
func TestKeyedRecordMatchesRawSetString(t *testing.T) {
	boxes := make([]LValue, 14)
	for i := range boxes {
		boxes[i] = LString(fmt.Sprintf("k%d", i))
	}
	rng := rand.New(rand.NewSource(52))
	for round := 0; round < 2000; round++ {
		hint := rng.Intn(12)
		r := NewKeyedRecord(hint)
		want := newLTable(0, hint)
		for i, ops := 0, rng.Intn(20); i < ops; i++ {
			k := rng.Intn(len(boxes))
			var v LValue = LNumber(i)
			if rng.Intn(6) == 0 {
				v = LNil
			}
			if rng.Intn(4) == 0 {
				r.Set(string(boxes[k].(LString)), v)
			} else {
				r.SetKey(boxes[k], v)
			}
			want.RawSetString(string(boxes[k].(LString)), v)
		}
		runtime.GC()
		if d := diffTables(r.Table(), want); d != "" {
			t.Fatalf("round %d (hint %d): %s", round, hint, d)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("SetKey with a number key did not panic")
		}
	}()
	r := NewKeyedRecord(1)
	r.SetKey(LNumber(1), LTrue)
}

// TestKeyedRecordBytes: a keyed record of n keys set with their boxes is
// one allocation; proctor (patches 72, 73): of 80 + 32n bytes in the
// allocator's class (the entries hold the keys' boxes, and the table's
// header is 80 bytes); NewRecord's, whose block holds the boxes of the
// keys it is given as Go strings, 80 + 48n. They were 112 + 48n and
// 112 + 64n.
func TestKeyedRecordBytes(t *testing.T) {
	keys := []LValue{LString("method"), LString("path"), LString("params"), LString("query"),
		LString("headers"), LString("body"), LString("remote"), LString("key")}
	for n := 1; n <= len(keys); n++ {
		var keyed, boxed uint64
		var ms runtime.MemStats
		measure := func(build func()) uint64 {
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			for range 100 {
				build()
			}
			runtime.ReadMemStats(&ms)
			return (ms.TotalAlloc - before) / 100
		}
		allocs := testing.AllocsPerRun(100, func() {
			r := NewKeyedRecord(n)
			for _, k := range keys[:n] {
				r.SetKey(k, LTrue)
			}
		})
		keyed = measure(func() {
			r := NewKeyedRecord(n)
			for _, k := range keys[:n] {
				r.SetKey(k, LTrue)
			}
		})
		boxed = measure(func() {
			r := NewRecord(n)
			for _, k := range keys[:n] {
				r.Set(string(k.(LString)), LTrue)
			}
		})
		want := []uint64{112, 144, 176, 208, 240, 288, 320, 352}[n-1]
		wantBoxed := []uint64{128, 176, 224, 288, 320, 384, 416, 480}[n-1]
		if allocs != 1 || keyed != want || boxed != wantBoxed {
			t.Errorf("%d keys: %v allocations, %d bytes (NewRecord %d); want 1, %d (%d)", n, allocs, keyed, boxed, want, wantBoxed)
		}
	}
}
