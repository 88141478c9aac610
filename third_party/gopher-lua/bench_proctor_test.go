package lua

import "testing"

// Benchmarks of what issue 21's patches touch: tables (patches 25, 29-31),
// calls and the call stack (26, 32, 33), numbers written as strings (34)
// and %. Each runs a script once per iteration in one state.

func benchScript(b *testing.B, src string) {
	b.Helper()
	L := NewState(Options{CallStackSize: 20000, RegistrySize: 32, RegistryMaxSize: 1 << 20, MinimizeStackMemory: true})
	defer L.Close()
	fn, err := L.LoadString(src)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		L.Push(fn)
		if err := L.PCall(0, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTableArray: a 1,000-item array filled, read and emptied.
func BenchmarkTableArray(b *testing.B) {
	benchScript(b, `local t = {} for i = 1, 1000 do t[i] = i end
local s = 0 for i = 1, #t do s = s + t[i] end
for i = 1, 1000 do table.remove(t) end`)
}

// BenchmarkTableSparse: 1,000 sparse integer keys and 100 string keys set,
// then traversed with pairs while every value is updated in place.
func BenchmarkTableSparse(b *testing.B) {
	benchScript(b, `local t = {} for i = 1, 1000 do t[i * 7 % 1999 + 1] = i end
for i = 1, 100 do t["k" .. (i % 10)] = i end
for k, v in pairs(t) do t[k] = v + 1 end`)
}

// BenchmarkTableInsertRemove: table.insert and table.remove at both ends.
func BenchmarkTableInsertRemove(b *testing.B) {
	benchScript(b, `local t = {} for i = 1, 200 do table.insert(t, i) table.insert(t, 1, i) end
while #t > 0 do table.remove(t) if #t > 0 then table.remove(t, 1) end end`)
}

// BenchmarkCallsAndPcall: Lua calls, closures and pcall with errors.
func BenchmarkCallsAndPcall(b *testing.B) {
	benchScript(b, `local n = 0
local function f(x) n = n + x return n end
for i = 1, 300 do f(i) pcall(error, "x") pcall(f, i) end
local function depth(k) if k == 0 then return 0 end return 1 + depth(k - 1) end
depth(1000)`)
}

// BenchmarkNumberToString: numbers written by tostring and .. (integers,
// fractions) and the % operator.
func BenchmarkNumberToString(b *testing.B) {
	benchScript(b, `local s = 0
for i = 1, 300 do s = s + #tostring(i) + #(i / 7 .. "") + (i % 7) end`)
}
