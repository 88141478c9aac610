package lua

import (
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/value"
)

// TestToGoSharedTables: a table reachable by several paths is copied once
// per path (copies share nothing), but the copy is bounded, so a value that
// doubles at every level ({t, t}) is an invalid error, fast, rather than a
// copy of billions of values.
func TestToGoSharedTables(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // substring of the invalid error; "" = copies
	}{
		{"shared_leaf", `local s = {1, 2, 3} return {a = s, b = s, c = {s, s}}`, ""},
		{"doubling_10", `local t = {1} for i = 1, 10 do t = {t, t} end return t`, ""},
		{"doubling_21", `local t = {1} for i = 1, 21 do t = {t, t} end return t`, "shared"},
		{"doubling_60", `local t = {1} for i = 1, 60 do t = {t, t} end return t`, "shared"},
		{"wide_then_doubling", `local t = {} for i = 1, 1000 do t[i] = i end for i = 1, 12 do t = {t, t} end return t`, "shared"},
		{"cycle_below_shared", `local s = {} s.me = s return {s, s}`, "cycle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			L := lua.NewState()
			defer L.Close()
			if err := L.DoString(tc.src); err != nil {
				t.Fatal(err)
			}
			lv := L.Get(-1)
			start := time.Now()
			v, err := ToGo(lv)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("copy took %s", d)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ToGo: %v", err)
				}
				if tc.name == "shared_leaf" {
					m := v.(map[string]any)
					a, b := m["a"].([]any), m["b"].([]any)
					a[0] = "changed"
					if b[0] != 1.0 {
						t.Fatalf("two paths to one table share their copy")
					}
				}
				return
			}
			if err == nil || value.KindOf(err) != value.KindInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ToGo error = %v, want an invalid error with %q", err, tc.want)
			}
		})
	}
}

// A nil inside an array (JSON's null) leaves a hole at its own index:
// later elements keep their places.
func TestToLuaArrayKeepsPlacesOfNil(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	lv, err := ToLua(L, []any{1.0, nil, 3.0})
	if err != nil {
		t.Fatal(err)
	}
	tb := lv.(*lua.LTable)
	if got := [3]lua.LValue{tb.RawGetInt(1), tb.RawGetInt(2), tb.RawGetInt(3)}; got != [3]lua.LValue{lua.LNumber(1), lua.LNil, lua.LNumber(3)} {
		t.Fatalf("[1, nil, 3] became %v", got)
	}
}

// TestToGoAllocations: copying a reply-sized table ({status, headers =
// {…}, body}) allocates its two maps and a number's box: no map of the
// tables seen, no name of a field's or a nested table's place (made only
// for an error), no box of each key.
func TestToGoAllocations(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	if err := L.DoString(`reply = {status = 200, headers = {["x-echo"] = "yes"}, body = "0123456789"}`); err != nil {
		t.Fatal(err)
	}
	reply := L.GetGlobal("reply")
	a := testing.AllocsPerRun(200, func() {
		if _, err := ToGoAt(reply, "reply"); err != nil {
			t.Fatal(err)
		}
	})
	// 2 maps (each with its group); the strings "yes" and the body share
	// their Lua boxes, and 200 is a number boxed once for all (5 before);
	// the place of the nested table ("reply.headers") is named only for an
	// error.
	if a > 4 {
		t.Errorf("%.0f allocations, want at most 4", a)
	}
	// The place is still named in an error.
	if err := L.DoString(`bad = {headers = {x = {f = print}}}`); err != nil {
		t.Fatal(err)
	}
	if _, err := ToGoAt(L.GetGlobal("bad"), "reply"); err == nil || !strings.Contains(err.Error(), "reply.headers.x.f: a function") {
		t.Errorf("error %v, want it to name reply.headers.x.f", err)
	}
	if err := L.DoString(`bad = {1, {2, {print}}}`); err != nil {
		t.Fatal(err)
	}
	if _, err := ToGoAt(L.GetGlobal("bad"), "reply"); err == nil || !strings.Contains(err.Error(), "reply[2][2][1]: a function") {
		t.Errorf("error %v, want it to name reply[2][2][1]", err)
	}
	for _, tc := range []struct{ lua, place string }{
		// Deeper than the steps kept inline.
		{`bad = {a = {b = {c = {d = {e = {f = {g = {h = {i = {j = print}}}}}}}}}}`, "reply.a.b.c.d.e.f.g.h.i.j: a function"},
		// A place after a deep branch that copied well.
		{`bad = {}; bad.deep = {a = {b = {c = {d = {e = {f = {g = {h = {i = {j = 1}}}}}}}}}}; bad.z = print`, "reply.z: a function"},
		{`bad = {1, x = {[true] = print}}`, "reply[x][true]: a function"},
		{`bad = {list = {1, 2, {k = print}}}`, "reply.list[3].k: a function"},
	} {
		if err := L.DoString(tc.lua); err != nil {
			t.Fatal(err)
		}
		if _, err := ToGoAt(L.GetGlobal("bad"), "reply"); err == nil || !strings.Contains(err.Error(), tc.place) {
			t.Errorf("%s: error %v, want it to name %s", tc.lua, err, tc.place)
		}
	}
}

// TestToLuaAllocations: copying a request-sized payload into Lua costs one
// allocation a table (its fields and their keys in one block, see the
// fork's NewRecord) and none for a string already boxed in the Go value;
// it was three a table, one a key and one a string.
func TestToLuaAllocations(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	payload := map[string]any{
		"method": "GET", "path": "/users/7", "params": map[string]any{"id": "7"},
		"query":   map[string]any{},
		"headers": map[string]any{"host": "127.0.0.1", "user-agent": "Go-http-client/1.1", "accept-encoding": "gzip"},
		"body":    "0123456789", "remote": "127.0.0.1:5000",
	}
	var lv lua.LValue
	a := testing.AllocsPerRun(200, func() {
		var err error
		if lv, err = ToLua(L, payload); err != nil {
			t.Fatal(err)
		}
	})
	if a > 4 {
		t.Errorf("%.0f allocations, want at most 4 (the four tables)", a)
	}
	// The copy reads as the Go value does, through Lua too.
	L.SetGlobal("p", lv)
	if err := L.DoString(`
		local n = 0
		for k, v in pairs(p.headers) do n = n + 1; assert(type(k) == "string" and type(v) == "string") end
		assert(n == 3 and p.headers["user-agent"] == "Go-http-client/1.1")
		assert(p.method == "GET" and p.path == "/users/7" and p.params.id == "7" and next(p.query) == nil)
		assert(p.body .. "!" == "0123456789!" and #p.remote == 14)
		p.extra = 1; p.method = nil
		local keys = {}
		for k in pairs(p) do keys[#keys + 1] = k end
		table.sort(keys)
		assert(table.concat(keys, ",") == "body,extra,headers,params,path,query,remote", table.concat(keys, ","))
	`); err != nil {
		t.Fatal(err)
	}
}

// TestNumbersCopyExactly: the numbers boxed once for all (0 to 1023) and
// every other number copy to Go as the same float64, -0 keeping its sign.
func TestNumbersCopyExactly(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, 200, 1023, 1023.5, 1024, -1, 0.5, 1e300, math.Inf(1)} {
		v, err := ToGo(lua.LNumber(f))
		g, ok := v.(float64)
		if err != nil || !ok || g != f || math.Signbit(g) != math.Signbit(f) {
			t.Errorf("%v: %#v, %v", f, v, err)
		}
	}
}

// recordFields is a value.Record for the tests.
type recordFields [][2]any

func (r recordFields) Len() int                  { return len(r) }
func (r recordFields) Field(i int) (string, any) { return r[i][0].(string), r[i][1] }

// TestToLuaRecord: a value.Record becomes the table its map would, one
// allocation a table: no Go map is made on the way.
func TestToLuaRecord(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	var rec any = recordFields{{"method", "GET"}, {"path", "/users/7"}, {"body", "0123456789"},
		{"headers", recordFields{{"host", "127.0.0.1"}, {"user-agent", "Go-http-client/1.1"}}},
		{"query", map[string]any{"a": []any{"1", "2"}}}}
	var lv lua.LValue
	a := testing.AllocsPerRun(200, func() {
		var err error
		if lv, err = ToLua(L, rec); err != nil {
			t.Fatal(err)
		}
	})
	// The record, headers and query one each, the list two (its table and
	// its array).
	if a > 5 {
		t.Errorf("%.0f allocations, want at most 5", a)
	}
	L.SetGlobal("p", lv)
	if err := L.DoString(`
		local keys = {}
		for k in pairs(p) do keys[#keys + 1] = k end
		table.sort(keys)
		assert(table.concat(keys, ",") == "body,headers,method,path,query", table.concat(keys, ","))
		assert(p.method == "GET" and p.path == "/users/7" and p.body == "0123456789")
		assert(p.headers.host == "127.0.0.1" and p.headers["user-agent"] == "Go-http-client/1.1")
		assert(#p.query.a == 2 and p.query.a[2] == "2")
		p.extra = 1; p.method = nil
		assert(p.extra == 1 and p.method == nil)
	`); err != nil {
		t.Fatal(err)
	}
	if _, err := ToLua(L, recordFields{{"f", func() {}}}); err == nil {
		t.Error("a record holding a function: no error")
	}
}

// boxedFields is recordFields as a value.BoxedRecord: its keys are the
// anys it holds.
type boxedFields struct{ recordFields }

func (r boxedFields) FieldBox(i int) (any, any) { return r.recordFields[i][0], r.recordFields[i][1] }

// TestToLuaBoxedRecord: a value.BoxedRecord becomes the table the same
// Record would (keys, values, edits through Lua), in fewer bytes: its
// keys' boxes are shared, not made in the table's block.
func TestToLuaBoxedRecord(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	fields := recordFields{{"method", "GET"}, {"path", "/users/7"}, {"body", "0123456789"},
		{"remote", "127.0.0.1:1"}, {"key", "7"}}
	bytesOf := func(rec any) uint64 {
		var ms runtime.MemStats
		least := uint64(math.MaxUint64)
		for range 3 {
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			for range 100 {
				if _, err := ToLua(L, rec); err != nil {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&ms)
			least = min(least, (ms.TotalAlloc-before)/100)
		}
		return least
	}
	plain, boxed := bytesOf(fields), bytesOf(boxedFields{fields})
	if boxed+5*16 > plain {
		t.Errorf("a boxed record of 5 fields: %d bytes, a record %d; want 80 fewer at least", boxed, plain)
	}
	lv, err := ToLua(L, boxedFields{fields})
	if err != nil {
		t.Fatal(err)
	}
	L.SetGlobal("p", lv)
	if err := L.DoString(`
		local keys = {}
		for k, v in pairs(p) do keys[#keys + 1] = k .. "=" .. v end
		table.sort(keys)
		assert(table.concat(keys, ",") == "body=0123456789,key=7,method=GET,path=/users/7,remote=127.0.0.1:1", table.concat(keys, ","))
		p.extra = 1; p.method = nil; p.path = "/x"
		assert(p.extra == 1 and p.method == nil and p.path == "/x")
		local n = 0
		for k in pairs(p) do n = n + 1 end
		assert(n == 5, n)
	`); err != nil {
		t.Fatal(err)
	}
	if _, err := ToLua(L, boxedFields{recordFields{{"f", func() {}}}}); err == nil {
		t.Error("a boxed record holding a function: no error")
	}
}

// TestToGoRecordAt: for an asker that takes Records, every table with
// only string keys is a value.Record, the same Value as ToGoAt's map
// (value.Copy gives it); lists and mixed tables are as ToGoAt makes them,
// and a value that cannot be copied is the same error, at the same place.
func TestToGoRecordAt(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	for _, tc := range []struct {
		lua     string
		records int // tables that became Records
		err     string
	}{
		{`v = {status = 200, headers = {["x-echo"] = "yes"}, body = "b"}`, 2, ""},
		{`v = {}`, 1, ""},
		{`v = {a = 1, b = 2, c = 3, d = 4, e = 5, f = {g = {h = true}}}`, 3, ""},
		{`v = {1, 2, {x = 1}}`, 1, ""},
		{`v = {1, x = {y = 1}}`, 1, ""},
		{`v = {[true] = {k = "v"}}`, 1, ""},
		{`v = "s"`, 0, ""},
		{`local t = {a = 1}; v = {x = t, y = t}`, 3, ""},
		{`v = {}; v.self = v`, 0, "reply.self: cycle"},
		{`v = {headers = {x = {f = print}}}`, 0, "reply.headers.x.f: a function"},
	} {
		if err := L.DoString(tc.lua); err != nil {
			t.Fatal(err)
		}
		lv := L.GetGlobal("v")
		got, err := ToGoRecordAt(lv, "reply")
		want, werr := ToGoAt(lv, "reply")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || werr == nil || err.Error() != werr.Error() {
				t.Errorf("%s: %v, want %q as ToGoAt's %v", tc.lua, err, tc.err, werr)
			}
			continue
		}
		if err != nil || werr != nil {
			t.Fatalf("%s: %v, %v", tc.lua, err, werr)
		}
		if n := countRecords(got); n != tc.records {
			t.Errorf("%s: %d Records, want %d", tc.lua, n, tc.records)
		}
		cp, err := value.Copy(got)
		if err != nil || !reflect.DeepEqual(cp, want) {
			t.Errorf("%s: copied %#v (%v), want %#v", tc.lua, cp, err, want)
		}
	}
	// A reply {status, headers, body} is one allocation a table, where
	// maps were two (TestToGoAllocations).
	if err := L.DoString(`reply = {status = 200, headers = {["x-echo"] = "yes"}, body = "0123456789"}`); err != nil {
		t.Fatal(err)
	}
	reply := L.GetGlobal("reply")
	if a := testing.AllocsPerRun(200, func() {
		if _, err := ToGoRecordAt(reply, "reply"); err != nil {
			t.Fatal(err)
		}
	}); a > 2 {
		t.Errorf("%.0f allocations, want at most 2", a)
	}
}

// countRecords counts the value.Records in v.
func countRecords(v any) int {
	switch x := v.(type) {
	case value.Record:
		n := 1
		for i := range x.Len() {
			_, e := x.Field(i)
			n += countRecords(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			n += countRecords(e)
		}
		return n
	case map[any]any:
		n := 0
		for _, e := range x {
			n += countRecords(e)
		}
		return n
	case map[string]any:
		n := 0
		for _, e := range x {
			n += countRecords(e)
		}
		return n
	}
	return 0
}
