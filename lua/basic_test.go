package lua

import (
	"strings"
	"testing"
)

func TestReturnsValue(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("w", `
local M = {}
function M.main(a, b)
  print("hello", a, b)
  return {sum = a + b, list = {1, 2, 3}}
end
return M
`)
	ex := h.Run(e, 1, 2)
	if ex.Err != nil {
		t.Fatalf("exit error: %v", ex.Err)
	}
	m, ok := ex.Value.(map[string]any)
	if !ok || m["sum"] != 3.0 {
		t.Fatalf("value = %#v", ex.Value)
	}
	if got := h.Out.String(); got != "hello\t1\t2\n" {
		t.Fatalf("stdout = %q", got)
	}
}

func TestRaiseHasFileLine(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("boom", "local function main()\n  local x = 1\n  error(\"kaput\")\nend\nreturn {main = main}\n")
	ex := h.Run(e)
	if ex.Err == nil || !strings.Contains(ex.Err.Error(), "boom.lua:3: kaput") {
		t.Fatalf("exit error = %v", ex.Err)
	}
}

func TestMissingMethodAtRunTime(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("dyn", `return setmetatable({}, {})`)
	ex := h.Run(e)
	if ex.Err == nil || !strings.Contains(ex.Err.Error(), `method "main" is not a function`) {
		t.Fatalf("exit = %v", ex.Err)
	}
}

// TestMethodThroughIndex: a module may inherit its method through __index;
// validation must let it through and the process must find it.
func TestMethodThroughIndex(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ name, src, want string }{
		{"setmetatable_stmt", `
local Base = {}
function Base.main() return "ok" end
local M = {}
setmetatable(M, {__index = Base})
return M`, ""},
		{"index_function", `
local M = {}
setmetatable(M, {__index = function(_, k) return function() return "ok" end end})
return M`, ""},
		{"index_raises", `
local M = {}
setmetatable(M, {__index = function() error("no methods here") end})
return M`, "no methods here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.ExpectExit(tc.name, tc.src, tc.want)
		})
	}
}

func TestResourceLimitsAreErrors(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ name, body, want string }{
		{"recursion", `local function f(n) return 1 + f(n + 1) end return f(1)`, "stack overflow"},
		{"deep_pcall", `local function f() return 1 + f() end local ok, err = pcall(f) assert(not ok) return "ok"`, ""},
		// C Lua 5.1 allows about 20,000 Lua frames; so does a process
		// (Options.MaxCallDepth), and the overflow is catchable.
		{"deep_recursion", `local function d(n) if n == 0 then return 0 end return 1 + d(n - 1) end assert(d(19000) == 19000) local ok, err = pcall(d, 30000) assert(not ok and err:find("stack overflow"), err) assert(d(10000) == 10000) return "ok"`, ""},
		{"big_table", `local t = {} for i = 1, 100000 do t[i] = {i} end return #t == 100000 and "ok"`, ""},
		{"string_rep_limit", `return ("x"):rep(2^27)`, "string too long: string.rep would make 134217728 bytes, over the limit of 67108864"},
		{"string_rep_huge", `return string.rep("ab", 2^40)`, "over the limit"},
		{"string_rep", `assert(("ab"):rep(3) == "ababab" and ("x"):rep(0) == "" and ("x"):rep(-1) == "" and (""):rep(1e18) == "" and ("x"):rep(2.7) == "xx") return "ok"`, ""},
		{"many_args", `return select("#", unpack((function() local t = {} for i = 1, 10000 do t[i] = i end return t end)())) == 10000 and "ok"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.ExpectExit(tc.name, "return { main = function() "+tc.body+" end }", tc.want)
		})
	}
}

// TestMaxCallDepth: the host's MaxCallDepth bounds a script's recursion.
func TestMaxCallDepth(t *testing.T) {
	h := newHarnessWith(t, Options{MaxCallDepth: 500})
	h.ExpectExit("depth", `return { main = function()
  local function d(n) if n == 0 then return 0 end return 1 + d(n - 1) end
  assert(d(400) == 400)
  local ok, err = pcall(d, 600)
  assert(not ok and err:find("stack overflow"), err)
  return "ok"
end }`, "")
}
