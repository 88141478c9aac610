package lua

import (
	"strings"
	"testing"
)

func TestReturnsValue(t *testing.T) {
	h := newHarness(t)
	e := h.entry("w", `
local M = {}
function M.main(a, b)
  print("hello", a, b)
  return {sum = a + b, list = {1, 2, 3}}
end
return M
`)
	ex := h.run(e, 1, 2)
	if ex.Err != nil {
		t.Fatalf("exit error: %v", ex.Err)
	}
	m, ok := ex.Value.(map[string]any)
	if !ok || m["sum"] != 3.0 {
		t.Fatalf("value = %#v", ex.Value)
	}
	if got := h.out.String(); got != "hello\t1\t2\n" {
		t.Fatalf("stdout = %q", got)
	}
}

func TestRaiseHasFileLine(t *testing.T) {
	h := newHarness(t)
	e := h.entry("boom", "local function main()\n  local x = 1\n  error(\"kaput\")\nend\nreturn {main = main}\n")
	ex := h.run(e)
	if ex.Err == nil || !strings.Contains(ex.Err.Error(), "boom.lua:3: kaput") {
		t.Fatalf("exit error = %v", ex.Err)
	}
}

func TestMissingMethodAtRunTime(t *testing.T) {
	h := newHarness(t)
	e := h.entry("dyn", `return setmetatable({}, {})`)
	ex := h.run(e)
	if ex.Err == nil || !strings.Contains(ex.Err.Error(), `method "main" is not a function`) {
		t.Fatalf("exit = %v", ex.Err)
	}
}
