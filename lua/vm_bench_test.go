package lua

import "testing"

// BenchmarkLuaVM measures the interpreter's hot paths that the runtime's
// limits touch (table growth, the .. operator, pattern matching, sort and
// concat): one op is one iteration of the loop inside the script, so a
// check added to one of those paths shows up here.
func BenchmarkLuaVM(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"table", `local t = {} for j = 1, 64 do t[j] = j end for j = 1, 64 do t["k" .. (j % 8)] = t[j] end`},
		{"concat", `local s = "" for j = 1, 16 do s = s .. "ab" .. j end`},
		{"pattern", `local s = "key=value; other=thing; n=42" local n = 0 for k, v in s:gmatch("(%w+)=(%w+)") do n = n + 1 end s = s:gsub("%d+", "x") assert(s:find("n=x", 1, true) and s:match("other=(%w+)") == "thing")`},
		{"sort", `local t = {} for j = 1, 32 do t[j] = (j * 7919) % 97 end table.sort(t, function(a, c) return a > c end) table.sort(t)`},
		{"tconcat", `local t = {} for j = 1, 32 do t[j] = "x" end local s = table.concat(t, ",") assert(#s == 63)`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(b)
			e := h.Entry("vm", "return { main = function(n) for i = 1, n do "+bc.body+" end return true end }")
			b.ResetTimer()
			ex := h.Run(e, float64(b.N))
			b.StopTimer()
			if ex.Err != nil {
				b.Fatal(ex.Err)
			}
		})
	}
}
