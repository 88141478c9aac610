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
  -- A log line's fields are cut to MaxLogFieldBytes (TestLogFieldsAreBounded).
  log.info("big", {a = s, b = {s, s}})
  print(s, s)
  log.info("fits", {a = s})
  return "ok"
end }`))
	if n := len(h.Out.String()); n != 60002 {
		t.Fatalf("printed %d bytes", n)
	}
}

// TestLogFieldsAreBounded: whatever a script logs is bounded. A table field
// was copied whole (a million entries, 200 levels, strings of 64 MiB: the
// logger's 64 KiB backstop cuts strings, not tables), and so was print's
// line. Now the fields of one line hold at most MaxLogFieldBytes in all,
// tables MaxLogFieldDepth deep, and a print writes at most MaxPrintBytes;
// each cut says what it left out.
func TestLogFieldsAreBounded(t *testing.T) {
	h := newHarness(t)
	h.Check(h.Entry("main", `
return { main = function()
  local huge = string.rep("x", 8 * 1024 * 1024)
  local list, map = {}, {}
  for i = 1, 200000 do list[i] = "item" .. i; map["k" .. i] = i end
  local deep = {}
  local d = deep
  for i = 1, 150 do d.next = {level = i}; d = d.next end
  log.info("list", {list = list})
  log.info("map", {map = map})
  log.info("deep", {deep = deep})
  log.info("string", {s = huge, t = {huge, huge}})
  local many = {}
  for i = 1, 100000 do many["f" .. i] = "v" end
  log.info("fields", many)
  log.info("small", {n = 1, nested = {a = {b = {"c"}}}})
  print(huge)
  print("short", 1)
  return "ok"
end }`))
	logs := h.Logs.String()
	for _, line := range strings.Split(logs, "\n") {
		if len(line) > MaxLogFieldBytes+16<<10 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
	for _, want := range []string{
		"msg=list", "of 200000 entries cut", "msg=map", "msg=deep", "nested deeper than 8 levels",
		"msg=string", "of 8388608 bytes cut", "msg=fields", "of 100000 fields cut", "nested=map[a:map[b:[c]]]",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q", want)
		}
	}
	out := h.Out.String()
	first, rest, _ := strings.Cut(out, "\n")
	if len(first) > MaxPrintBytes || !strings.HasSuffix(first, "of 8388608 bytes cut)") || rest != "short\t1\n" {
		t.Fatalf("printed %d bytes: %.100q ... %q", len(out), out, out[max(len(out)-100, 0):])
	}
}

// TestLogFieldsNeverShadowTheLine: a field named as one of the line's own
// keys (pid, entry, msg, ...) was written beside it, so a JSON line held
// "pid" twice and a reader took the script's for the process's.
func TestLogFieldsNeverShadowTheLine(t *testing.T) {
	h := newHarness(t)
	h.Check(h.Entry("logger", `
return { main = function()
  log.info("forged", {pid = "<vm.6.1>", entry = "app:other", msg = "m", level = "x", time = 1, ok = 1})
  return "ok"
end }`))
	logs := h.Logs.String()
	for _, want := range []string{
		"entry=test:logger", "fields.entry=app:other", "fields.pid=<vm.6.1>", "fields.msg=m",
		"fields.level=x", "fields.time=1", " ok=1",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	for _, key := range []string{" pid=", " entry=", " msg="} {
		if n := strings.Count(logs, key); n != 1 {
			t.Errorf("%q appears %d times:\n%s", key, n, logs)
		}
	}
}
