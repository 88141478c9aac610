package lua

import (
	"errors"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/value"
)

// Error values read like errors: tostring and .. give "kind: message",
// == compares them, < raises a clear message, and a field they lack
// raises with the nearest one.
func TestErrorValuesReadLikeErrors(t *testing.T) {
	h := newHarness(t)
	h.Check(h.Entry("main", `
return { main = function()
  local _, err = process.lookup("nobody")
  assert(tostring(err) == "not_found: " .. err.message, tostring(err))
  assert(err.message:find("nobody", 1, true))
  assert("failed: " .. err == "failed: " .. tostring(err))
  assert(err .. "!" == tostring(err) .. "!")
  assert(string.format("%s", err) == tostring(err))
  local _, again = process.lookup("nobody")
  assert(err == again, "the same error twice compares equal")
  local _, other = process.lookup("someone")
  assert(err ~= other)
  assert(err ~= "not_found", "an error is never a string")
  local ok, cmp = pcall(function() return err < again end)
  assert(not ok and cmp:find("attempt to compare error values: they have no order (compare err.kind or err.message)", 1, true), cmp)
  ok, cmp = pcall(function() return err .. {} end)
  assert(not ok and cmp:find("attempt to concatenate an error value with a table", 1, true), cmp)
  ok, cmp = pcall(function() return err.mesage end)
  assert(not ok and cmp:find('error value has no field "mesage" (did you mean "message"?)', 1, true), cmp)
  assert(err.cause == nil and err.details == nil and err.errors == nil)
  return "ok"
end }`))
}

// assert(v, err) and error(err) raise an error value intact: pcall hands
// back the same value, with its kind and fields.
func TestAssertAndErrorRaiseErrorValuesIntact(t *testing.T) {
	h := newHarness(t)
	h.Check(h.Entry("main", `
local errors = require("errors")
return { main = function()
  local ok, e = pcall(function() assert(process.lookup("nobody")) end)
  assert(not ok and type(e) == "userdata" and e.kind == "not_found", tostring(e))
  local mine = errors.new("invalid", "bad room")
  local ok2, e2 = pcall(error, mine)
  assert(not ok2 and rawequal(e2, mine), "error(err) keeps the very value")
  local ok3, e3 = pcall(function() assert(false, mine) end)
  assert(not ok3 and rawequal(e3, mine))
  -- strings keep Lua's behaviour: the position in front
  local ok4, e4 = pcall(function() assert(false, "plain") end)
  assert(not ok4 and e4:find("main.lua:%d+: plain$"), e4)
  local ok5, e5 = pcall(function() assert(nil) end)
  assert(not ok5 and e5:find("assertion failed!", 1, true), e5)
  -- a true value passes every argument through
  local a, b, c = assert(1, 2, 3)
  assert(a == 1 and b == 2 and c == 3)
  return "ok"
end }`))
}

// The errors module makes, wraps and tests error values; a cause and
// details cross a process boundary with the error.
func TestErrorsModule(t *testing.T) {
	h := newHarness(t)
	h.Entry("keeper", `
local errors = require("errors")
return { main = function()
  local msg = process.inbox():receive()
  local root = errors.new{kind = errors.NOT_FOUND, message = "no room lobby", details = {room = "lobby"}}
  msg:reply(nil, errors.wrap(root, "join", {tries = 2}))
end }`)
	h.Check(h.Entry("main", `
local errors = require("errors")
return { main = function()
  assert(errors.INVALID == "invalid" and errors.NOT_FOUND == "not_found" and errors.STOPPED == "stopped")
  local e = errors.new("invalid", "bad size", {size = -1})
  assert(e.kind == "invalid" and e.message == "bad size" and e.details.size == -1)
  assert(tostring(e) == "invalid: bad size")
  local plain = errors.new("just a message")
  assert(plain.kind == "internal" and plain.message == "just a message")
  local w = errors.wrap(e, "resize")
  assert(w.kind == "invalid" and w.message == "resize: bad size" and w.cause == e)
  assert(errors.cause(w) == e and errors.unwrap(w) == e and errors.cause(e) == nil)
  assert(errors.is(w, "invalid") and errors.is(w, errors.INVALID) and not errors.is(w, "timeout"))
  assert(errors.is(w, e), "a cause is found by identity")
  assert(not errors.is(e, w))
  assert(not errors.is(nil, "invalid") and not errors.is("invalid", "invalid"))
  assert(errors.wrap(nil, "x") == nil, "wrapping nothing is nothing")
  local s = errors.wrap("a string", "ctx")
  assert(s.kind == "internal" and s.message == "ctx: a string" and s.cause.message == "a string")
  local ok, bad = pcall(errors.new, "not_fund", "x")
  assert(not ok and bad:find('unknown error kind "not_fund" (did you mean "not_found"?)', 1, true), bad)
  ok, bad = pcall(errors.is, e, "timeuot")
  assert(not ok and bad:find('did you mean "timeout"', 1, true), bad)
  ok, bad = pcall(errors.new, {kind = "invalid", mesage = "x"})
  assert(not ok and bad:find('did you mean "message"', 1, true), bad)
  ok, bad = pcall(errors.new, "invalid", "x", {f = function() end})
  assert(not ok and bad:find("a function cannot cross a process boundary", 1, true), bad)

  -- across a process: the cause and the details come along
  local keeper = assert(process.spawn("keeper"))
  local none, err = process.ask(keeper, "get", nil, "5s")
  assert(none == nil and err.kind == "not_found" and err.message == "join: no room lobby", tostring(err))
  assert(err.details.tries == 2 and err.cause.message == "no room lobby" and err.cause.details.room == "lobby")
  assert(errors.is(err, errors.new("not_found", "no room lobby")), "the cause, matched by kind and message")
  return "ok"
end }`))
}

// A script that does not catch an error value is reported as "kind:
// message" with where it was raised and its traceback; its exit reason is
// the error value itself.
func TestUncaughtErrorValueIsReported(t *testing.T) {
	h := newHarness(t)
	ex := h.Run(h.Entry("boom", `
local errors = require("errors")
local function check(n)
  if n < 1 then
    return nil, errors.new("invalid", "size must be at least 1")
  end
  return n
end
return { main = function()
  local size = assert(check(0))
  return size
end }`))
	var ve *value.Error
	if !errors.As(ex.Err, &ve) || ve.Kind != value.KindInvalid || ve.Message != "size must be at least 1" {
		t.Fatalf("exit = %v", ex.Err)
	}
	logs := h.Logs.String()
	for _, want := range []string{"level=ERROR", `msg="process crashed"`, "entry=test:boom", `error="invalid: size must be at least 1"`, "location=", "boom.lua:10", "traceback="} {
		if !strings.Contains(logs, want) {
			t.Fatalf("the crash report lacks %s:\n%s", want, logs)
		}
	}
}

// A misspelt function or method names its table, the name, and the
// nearest one; the same for the standard libraries.
func TestMisspeltNamesSuggest(t *testing.T) {
	h := newHarness(t)
	h.Check(h.Entry("main", `
local function fails(f, want)
  local ok, err = pcall(f)
  assert(not ok and err:find(want, 1, true), tostring(err))
end
return { main = function()
  fails(function() process.sned(process.pid(), "x") end, 'process has no function "sned" (did you mean "send"?)')
  fails(function() return string.fomat("%d", 1) end, 'string has no function "fomat" (did you mean "format"?)')
  fails(function() return channel.nwe() end, 'channel has no function "nwe" (did you mean "new"?)')
  fails(function() return require("json").encdoe({}) end, 'json has no function "encdoe" (did you mean "encode"?)')
  fails(function() return ("x"):uper() end, 'string has no function "uper" (did you mean "upper"?)')
  -- a string's missing field is nil, as in Lua: only a method call raises
  local payload = "just text"
  assert(payload.op == nil and (payload and payload.op) == nil)
  fails(function() return process.zzzzzz end, 'process has no function "zzzzzz"')
  process.send(process.pid(), "t")
  local msg = process.inbox():receive()
  fails(function() return msg:replay(1) end, 'message has no method "replay" (did you mean "reply"?)')
  fails(function() return process.with_options{name = "x"}:spwan("y") end, 'spawner has no method "spwan" (did you mean "spawn"?)')
  -- what a script adds is found, and non-string keys read nil
  process.extra = 1
  assert(process.extra == 1 and process[1] == nil)
  return "ok"
end }`))
}
