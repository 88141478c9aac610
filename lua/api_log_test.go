package lua

import (
	"strings"
	"testing"
)

func TestLogAndPrint(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("logger", `
return { main = function()
  log.info("hello from lua", {user = "ann", n = 3, nested = {a = 1}})
  log.debug("dbg")
  log.warn("careful")
  log.error("bad", {err = select(2, process.send("nobody", "x"))})
  print("a", 1, nil, true, {} ~= nil)
  return "ok"
end }`)
	h.Check(e)
	logs := h.Logs.String()
	for _, want := range []string{
		`level=INFO msg="hello from lua" entry=test:logger`, "n=3", "user=ann", "nested=map[a:1]",
		"level=DEBUG msg=dbg", "level=WARN msg=careful", `level=ERROR msg=bad`, "nobody",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	if got := h.Out.String(); got != "a\t1\tnil\ttrue\ttrue\n" {
		t.Fatalf("stdout = %q", got)
	}
}

// TestPrintAndLogLinesAreStrings: print and log build one line from their
// arguments; many copies of one large string must not make a line of
// gigabytes.
func TestPrintAndLogLinesAreStrings(t *testing.T) {
	h := newHarnessWith(t, Options{MaxStringSize: 1 << 16})
	h.Check(h.Entry("main", `
return { main = function()
  local s = string.rep("x", 30000)
  local ok, err = pcall(print, s, s, s)
  assert(not ok and err:find("string too long: print would make", 1, true), tostring(err))
  ok, err = pcall(log.info, "big", {a = s, b = {s, s}})
  assert(not ok and err:find("string too long: log would make", 1, true), tostring(err))
  print(s, s)
  log.info("fits", {a = s})
  return "ok"
end }`))
	if n := len(h.Out.String()); n != 60002 {
		t.Fatalf("printed %d bytes", n)
	}
}
