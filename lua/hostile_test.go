package lua

import (
	"strings"
	"testing"

	"github.com/proctor-run/proctor/process"
)

// Regression tests of the second attacker pass (issue 10): what a hostile
// script did to the node through the interpreter and the process API.

// TestPatternNestingIsBounded: a pattern of millions of '(' overflowed the
// Go stack in the pattern parser, a fatal error for the whole node. A
// pattern has at most 32 captures, as in C Lua, and the error quotes only
// the start of a long pattern.
func TestPatternNestingIsBounded(t *testing.T) {
	h := newHarness(t)
	h.Check(h.Entry("main", `
return { main = function()
  local function fails(want, f, ...)
    local ok, err = pcall(f, ...)
    assert(not ok, want .. ": no error")
    assert(err:find(want, 1, true), err)
    return err
  end
  local deep = string.rep("(", 20 * 2^20)
  local err = fails("too many captures", string.find, "a", deep)
  assert(#err < 300, #err)
  assert(err:find("(20971520 bytes)", 1, true), err)
  fails("too many captures", string.match, "a", string.rep("(a)", 33))
  fails("too many captures", string.gsub, "a", string.rep("()", 33), "")
  fails("too many captures", string.gmatch, "a", string.rep("(", 1000))
  assert(select("#", string.match(string.rep("a", 32), string.rep("(a)", 32))) == 32)
  return "ok"
end }`))
}

// TestSourceNestingIsBounded: source nested without bound overflowed the
// Go stack in the compiler, a fatal error for the node. It is a syntax
// error that names the line; a long chain of .. compiles in linear time.
func TestSourceNestingIsBounded(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"parens", "return {\n" + strings.Repeat("{", 1e6) + strings.Repeat("}", 1e6) + "}", "deep.lua:2:1: chunk has too many syntax levels (more than 200 nested)"},
		{"unary", "local x = 1\nreturn " + strings.Repeat("- ", 1e6) + "x", "deep.lua:2:1: chunk has too many syntax levels"},
		{"concat", "local a = 'x'\nreturn a" + strings.Repeat("..a", 100_000), "deep.lua:2: too many operands of .. (100001)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("deep.lua", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSpawnPastMaxProcesses: a script spawning in a loop took the node's
// memory; past the node's MaxProcesses, spawn returns nil, limit.
func TestSpawnPastMaxProcesses(t *testing.T) {
	h := newHarnessOn(t, process.Options{MaxProcesses: 50}, Options{})
	h.Entry("idle", `return { main = function() process.inbox():receive() end }`)
	h.Check(h.Entry("main", `
return { main = function()
  local n, err = 0
  while true do
    local pid
    pid, err = process.spawn("idle")
    if not pid then break end
    n = n + 1
    assert(n < 1000, "no limit")
  end
  assert(err.kind == "limit", tostring(err))
  assert(tostring(err):find("^limit: .*too many processes"), tostring(err))
  assert(n > 0 and n < 50, n)
  return "ok"
end }`))
}
