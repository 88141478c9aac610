package lua

import (
	"strings"
	"testing"
)

func TestSandbox(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("main", `
return { main = function()
  for _, name in ipairs{"os", "io", "debug", "load", "loadstring", "loadfile", "dofile",
      "module", "getfenv", "setfenv", "collectgarbage", "newproxy", "_printregs", "package", "channel_lib"} do
    assert(_G[name] == nil or name == "channel_lib", name .. " must not exist")
  end
  local dumped, derr = pcall(function() return string.dump end)
  assert(not dumped and derr:find('string has no function "dump"', 1, true), "string.dump: " .. tostring(derr))
  for _, name in ipairs{"string", "table", "math", "coroutine", "process", "channel", "time", "log",
      "print", "pairs", "ipairs", "pcall", "error", "tostring", "type", "select", "unpack", "require"} do
    assert(_G[name] ~= nil, name .. " must exist")
  end
  assert(("abc"):upper() == "ABC", "string methods")
  assert(string.format("%d-%s", 3, "x") == "3-x")
  assert(#table.concat({"a", "b"}) == 2)
  assert(math.floor(2.5) == 2)
  local co = coroutine.wrap(function() coroutine.yield(1) return 2 end)
  assert(co() == 1 and co() == 2, "coroutines")
  local th = coroutine.create(function() return process.pid() end)
  local resumed, pid = coroutine.resume(th)
  assert(resumed and pid == process.pid(), "process functions work inside coroutines")
  assert(getmetatable("") == false, "string metatable is protected")
  assert(getmetatable(process) == false, "library metatable is protected")
  assert(not pcall(setmetatable, process, {}), "cannot replace it")
  local ok, err = pcall(require, "os")
  assert(not ok and tostring(err):find("no such module"), tostring(err))
  -- writes to a library stay in this process
  string.shout = function(s) return s:upper() .. "!" end
  process.extra = 1
  assert(string.shout("a") == "A!")
  -- _G is this process's own globals
  assert(_G._G == _G and _G.string == string, "_G")
  mine = 1
  assert(_G.mine == 1, "a global read through _G")
  _G.also = 2
  assert(also == 2, "a global set through _G")
  return "ok"
end }`)
	h.Check(e)
	other := h.Entry("other", `
return { main = function()
  assert(not pcall(function() return string.shout end), "another process's library write leaked")
  assert(not pcall(function() return process.extra end), "another process's library write leaked")
  assert(mine == nil and _G.also == nil, "another process's globals leaked")
  return "ok"
end }`)
	h.Check(other)
}

func TestRequireEntryModules(t *testing.T) {
	h := newHarness(t)
	h.Write("lib/util.lua", `
local M = {}
local count = 0
function M.twice(x) count = count + 1 return x * 2, count end
return M
`)
	h.Write("lib/circ.lua", `return require("circ")`)
	h.Write("lib/flaky.lua", `error("flaky failed to load")`)
	e := h.Entry("main", `
local util = require("util")
return { main = function()
  local u2 = require("util")
  assert(u2 == util, "a module loads once per process")
  local v, n = util.twice(21)
  assert(v == 42 and n == 1)
  local json = require("json")
  assert(json.encode({1}) == "[1]")
  local ok, err = pcall(require, "circ")
  assert(not ok and tostring(err):find("circular"), tostring(err))
  for i = 1, 2 do
    ok, err = pcall(require, "flaky")
    assert(not ok and tostring(err):find("flaky failed to load"), "require #" .. i .. ": " .. tostring(err))
  end
  return "ok"
end }`, "modules:\n  util: file://lib/util.lua\n  circ: file://lib/circ.lua\n  flaky: file://lib/flaky.lua")
	h.Check(e)
	found := 0
	for _, s := range e.Sources {
		if strings.HasSuffix(s.Path, "util.lua") || strings.HasSuffix(s.Path, "main.lua") {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("sources recorded on the entry: %d of 2 (reload must see module bytes)", found)
	}
}

func TestValidation(t *testing.T) {
	h := newHarness(t)
	h.Write("ok.lua", "return { main = function() end, other = function() end }")
	h.Write("global.lua", "function main() end")
	h.Write("syntax.lua", "local x = 1\nlocal function f(\n  return 1\nend\n")
	h.Write("nomain.lua", "local M = {}\nfunction M.run() end\nreturn M\n")
	h.Write("dynamic.lua", "return setmetatable({}, {__index = function() return function() end end})")
	h.Write("badmod.lua", "return {")
	h.Write("unclosed.lua", "local function f()\n  local x = 1\n  x = x + 1\n\n")
	h.Write("brace3.lua", "local a = 1\nlocal b = 2\nlocal t = {\n  x = 1,\n\n")
	h.Write("utf8.lua", "local a = 1\nlocal b = 2\n\xff\xfe = 3\n")
	h.Write("mian.lua", "return { mian = function() end }\n")
	h.Write("cyrillic.lua", "local x = 1\nlocal y = x \u0441 2\n")
	h.Write("string3.lua", "local a = 1\nlocal b = 2\nlocal s = \"abc\nlocal c = 3\n")
	h.Write("long3.lua", "local a = 1\nlocal b = 2\nlocal s = [[abc\n\n")
	h.Write("trailing.lua", "local a = 1\nlocal b = 2 +\n\n")
	for _, tc := range []struct {
		name, fields string
		want         []string // substrings of the errors, one per error
	}{
		{"ok", "source: file://ok.lua\nmethod: other\nargs: [1, x]\nmailbox_size: 10", nil},
		{"global", "source: file://global.lua", nil},
		{"dynamic", "source: file://dynamic.lua\nmethod: anything", nil},
		{"missing_source", "method: main", []string{"source: required"}},
		{"bad_scheme", "source: ok.lua", []string{"must be file://PATH"}},
		{"no_file", "source: file://nope.lua", []string{"source nope.lua"}},
		{"syntax", "source: file://syntax.lua", []string{"syntax.lua:3:"}},
		{"no_method", "source: file://nomain.lua", []string{`no function "main"`}},
		{"misspelt_main", "source: file://mian.lua", []string{`no function "main" (did you mean "mian"?)`}},
		{"wrong_method", "source: file://ok.lua\nmethod: nope", []string{`method: `, `no function "nope"`}},
		{"negative_mailbox", "source: file://ok.lua\nmailbox_size: -1", []string{"mailbox_size: must be 0"}},
		{"args_not_list", "source: file://ok.lua\nargs: {a: 1}", []string{"args: must be a list"}},
		{"unknown_field", "source: file://ok.lua\nmetod: main", []string{`metod: unknown field (did you mean "method"?)`}},
		{"module_syntax", "source: file://ok.lua\nmodules:\n  bad: file://badmod.lua", []string{"modules.bad: syntax error", "badmod.lua:1:8: unexpected end of file: '{' is not closed"}},
		{"syntax_at_eof", "source: file://unclosed.lua", []string{"unclosed.lua:1:7: unexpected end of file: 'function' is not closed"}},
		{"unclosed_brace_line3", "source: file://brace3.lua", []string{"brace3.lua:3:11: unexpected end of file: '{' is not closed"}},
		{"invalid_utf8_line3", "source: file://utf8.lua", []string{`utf8.lua:3:1: Invalid token near '\xff'`}},
		{"non_ascii_char_named_whole", "source: file://cyrillic.lua", []string{"cyrillic.lua:2:13: Invalid token (U+0441: outside strings and comments, Lua takes only ASCII) near '\u0441'"}},
		{"unterminated_string_line3", "source: file://string3.lua", []string{"string3.lua:3:11: unterminated string near 'abc'"}},
		{"unterminated_long_string_line3", "source: file://long3.lua", []string{"long3.lua:3:11: unterminated multiline string"}},
		{"trailing_operator", "source: file://trailing.lua", []string{"trailing.lua:2: unexpected end of file"}},
		{"module_runtime_name", "source: file://ok.lua\nmodules:\n  json: file://ok.lua", []string{"runtime module"}},
		{"module_bad_name", "source: file://ok.lua\nmodules:\n  \"a-b\": file://ok.lua", []string{"invalid module name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := h.Decode(tc.name, tc.fields)
			if len(tc.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("want one error, got %d: %v", len(errs), errs)
			}
			msg := errs[0].Error()
			if !strings.Contains(msg, "test:"+tc.name) || !strings.Contains(msg, "config.yaml:") {
				t.Errorf("error does not name the file and entry: %s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestDefinedMethods(t *testing.T) {
	for _, tc := range []struct {
		src        string
		has, known bool
	}{
		{"return { main = function() end }", true, true},
		{"local function main() end\nreturn { main = main }", true, true},
		{"function main() end", true, true},
		{"main = function() end", true, true},
		{"local M = {}\nfunction M.main() end\nreturn M", true, true},
		{"local M = {}\nM.main = function() end\nreturn M", true, true},
		{"local M = {}\nfunction M:main() end\nreturn M", true, true},
		{"local M = { main = print }\nreturn M", true, true},
		{"local M = {}\nfunction M.run() end\nreturn M", false, true},
		{"return { run = function() end }", false, true},
		{"local x = 1", false, true},
		{"local M = require('other')\nreturn M", false, false},
		{"local M = {}\nM[name] = print\nreturn M", false, false},
		{"local M = {}\nfor _, n in ipairs{'main'} do M[n] = print end\nreturn M", false, false},
		{"return setmetatable({}, {})", false, false},
		{"return { [k] = print }", false, false},
		{"return N", false, false},
		{"local M = {}\nsetmetatable(M, {__index = B})\nreturn M", false, false},
		{"local M = {}\nrawset(M, 'main', print)\nreturn M", false, false},
		{"local M = {}\nM:init()\nreturn M", false, false},
		{"local M = {}\nprint('loaded')\nfunction M.run() end\nreturn M", false, true},
	} {
		c, err := Compile("t.lua", []byte(tc.src))
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		has, known := c.HasMethod("main")
		if has != tc.has || known != tc.known {
			t.Errorf("%q: has=%v known=%v, want %v %v", tc.src, has, known, tc.has, tc.known)
		}
	}
}

// TestSharedLibrariesUnderConcurrency has many processes use the shared
// libraries at once; run with -race it proves they only read them.
func TestSharedLibrariesUnderConcurrency(t *testing.T) {
	h := newHarness(t)
	h.Entry("user", `
local json = require("json")
return { main = function(i)
  for n = 1, 200 do
    local s = string.format("%d:%s", n, ("x"):rep(3)):gsub("x", "y")
    assert(s:upper():find("YYY"))
    local t = {5, 3, 1, 4}
    table.sort(t, function(a, b) return a > b end)
    assert(t[1] == 5 and math.max(unpack(t)) == 5)
    for k, v in pairs({a = 1}) do assert(k == "a") end
    for _, v in ipairs(t) do assert(type(v) == "number") end
    assert(json.decode(json.encode({n = n})).n == n)
    local _, err = process.send("nobody", "x")
    assert(err.kind == "not_found" and tostring(err) ~= "")
    string["mine" .. i] = n
    assert(getmetatable("") == false)
    local co = coroutine.wrap(function() coroutine.yield(tostring(process)) end)
    assert(co())
  end
  return "ok"
end }`)
	e := h.Entry("main", `
return { main = function()
  local events = process.events()
  for i = 1, 20 do assert(process.spawn_monitored("user", i)) end
  for i = 1, 20 do
    local ev = events:receive()
    assert(ev.result.value == "ok", tostring(ev.result.error))
  end
  return "ok"
end }`)
	h.Check(e)
}
