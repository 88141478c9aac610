package lua

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

func TestSendAndInboxBetweenProcesses(t *testing.T) {
	h := newHarness(t)
	h.Entry("echo", `
return { main = function()
  local inbox = process.inbox()
  while true do
    local msg, ok = inbox:receive()
    if not ok then return "closed" end
    if msg:topic() == "stop" then return "stopped" end
    process.send(msg:from(), "echo", msg:payload())
  end
end }`)
	e := h.Entry("main", `
return { main = function()
  local echo = assert(process.spawn("echo"))
  assert(process.send(echo, "ping", {n = 1, list = {"a", "b"}}))
  local msg = process.inbox():receive()
  assert(msg:topic() == "echo", "topic " .. msg:topic())
  assert(msg:from() == echo, "from")
  local p = msg:payload()
  assert(p.n == 1 and p.list[2] == "b", "payload")
  assert(process.send(echo, "stop"))
  return "ok"
end }`)
	h.Check(e)
}

func TestAskReplyRejectAndTimeout(t *testing.T) {
	h := newHarness(t)
	h.Entry("server", `
return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    local t = msg:topic()
    if t == "add" then
      local p = msg:payload()
      msg:reply(p.a + p.b)
    elseif t == "fail" then
      msg:reply(nil, {kind = "not_found", message = "no such thing"})
    elseif t == "silent" then
      -- never answers
    elseif t == "late" then
      time.sleep(50)
      local settled = msg:reply("too late")
      process.send(msg:payload(), "late_result", settled)
    end
  end
end }`)
	e := h.Entry("main", `
return { main = function()
  local srv = assert(process.spawn("server"))
  local v, aerr, from = process.ask(srv, "add", {a = 2, b = 3})
  assert(v == 5 and aerr == nil, "sum " .. tostring(v))
  assert(from == srv, "from")
  local v2, err = process.ask(srv, "fail", nil)
  assert(v2 == nil and err.kind == "not_found" and err.message == "no such thing", "reject: " .. tostring(err))
  local v3, err3 = process.ask(srv, "silent", nil, 30)
  assert(v3 == nil and err3.kind == "timeout", "timeout: " .. tostring(err3))
  local v4, err4 = process.ask(srv, "late", process.pid(), "10ms")
  assert(err4 and err4.kind == "timeout", "late timeout")
  local msg = process.listen("late_result"):receive()
  assert(msg:payload() == false, "the late reply was dropped")
  local v5, err5 = process.ask("<test.999999.1>", "x")
  assert(v5 == nil and err5.kind == "not_found", "dead pid: " .. tostring(err5))
  assert(tostring(err5) == "not_found: " .. err5.message, tostring(err5))
  process.terminate(srv)
  return "ok"
end }`)
	h.Check(e)
}

func TestSendErrors(t *testing.T) {
	h := newHarness(t)
	h.Entry("sleeper", `return { main = function() time.sleep(100000) end }`, "mailbox_size: 1")
	e := h.Entry("main", `
return { main = function()
  local ok, err = process.send("nobody", "x")
  assert(ok == nil and err.kind == "not_found", "unknown name: " .. tostring(err))
  ok, err = process.send("<bogus", "x")
  assert(ok == nil and err.kind == "invalid", "bad pid: " .. tostring(err))
  ok, err = process.send(process.pid(), "x", function() end)
  assert(ok == nil and err.kind == "invalid" and err.message:find("function"), "function payload: " .. tostring(err))
  local t = {}; t.self = t
  ok, err = process.send(process.pid(), "x", t)
  assert(ok == nil and err.kind == "invalid" and err.message:find("cycle"), "cycle: " .. tostring(err))
  local deep = {}
  local cur = deep
  for i = 1, 100 do cur.next = {}; cur = cur.next end
  ok, err = process.send(process.pid(), "x", deep)
  assert(ok == nil and err.kind == "invalid" and err.message:find("deeper"), "deep: " .. tostring(err))
  ok, err = process.send(process.pid(), "x", process.inbox())
  assert(ok == nil and err.kind == "invalid", "channel: " .. tostring(err))
  local s = assert(process.spawn("sleeper"))
  assert(process.send(s, "one"))
  ok, err = process.send(s, "two")
  assert(ok == nil and err.kind == "limit", "full mailbox: " .. tostring(err))
  process.terminate(s)
  -- a number is not taken for the name it prints as
  for _, f in ipairs{process.send, process.ask, process.terminate, process.monitor} do
    local good, bad = pcall(f, 42, "x")
    assert(not good and tostring(bad):find("a PID or a name (a string) expected, got number", 1, true), tostring(bad))
  end
  return "ok"
end }`)
	h.Check(e)
}

func TestMonitorsAndEvents(t *testing.T) {
	h := newHarness(t)
	h.Entry("ret", `return { main = function(x) return {got = x} end }`)
	h.Entry("crash", `return { main = function() error("crashed on purpose") end }`)
	h.Entry("wait", `return { main = function() process.inbox():receive() return "done" end }`)
	e := h.Entry("main", `
return { main = function()
  local events = process.events()
  local a = assert(process.spawn_monitored("ret", 7))
  local ev = events:receive()
  assert(ev.kind == "EXIT" and ev.from == a, "exit event")
  assert(ev.result.value.got == 7 and ev.result.error == nil, "exit value")
  local b = assert(process.spawn_monitored("crash"))
  ev = events:receive()
  assert(ev.kind == "EXIT" and ev.from == b, "crash event")
  assert(ev.result.error.kind == "internal" and ev.result.error.message:find("crashed on purpose"), "crash error: " .. tostring(ev.result.error))
  local c = assert(process.spawn("wait"))
  assert(process.monitor(c))
  assert(process.terminate(c))
  ev = events:receive()
  assert(ev.from == c and ev.result.error.kind == "stopped", "terminated: " .. tostring(ev.result.error))
  local d = assert(process.spawn("wait"))
  assert(process.monitor(d))
  assert(process.unmonitor(d))
  assert(process.send(d, "go"))
  local r = channel.select{ events:case_receive(), time.after(100):case_receive() }
  assert(r.channel ~= events, "no event after unmonitor")
  return "ok"
end }`)
	h.Check(e)
}

func TestLinks(t *testing.T) {
	h := newHarness(t)
	h.Entry("crash", `return { main = function() time.sleep(20) error("linked crash") end }`)
	h.Entry("parent", `return { main = function() process.spawn_linked("crash") time.sleep(100000) end }`)
	h.Entry("trapper", `
return { main = function()
  process.set_options{trap_links = true}
  local pid = assert(process.spawn_linked("crash"))
  local ev = process.events():receive()
  assert(ev.kind == "LINK_DOWN" and ev.from == pid, "link down")
  assert(ev.result.error.message:find("linked crash"), "reason")
  return "ok"
end }`)
	ex := h.Run(h.Known("test:parent"))
	var le *process.LinkError
	if !errors.As(ex.Err, &le) || !strings.Contains(ex.Err.Error(), "linked crash") {
		t.Fatalf("parent exit = %v, want the linked crash", ex.Err)
	}
	h.Check(h.Known("test:trapper"))

	e := h.Entry("unlinker", `
return { main = function()
  local pid = assert(process.spawn_monitored("crash"))
  assert(process.link(pid))
  assert(process.unlink(pid))
  -- Link signals go out before EXIT events: once the EXIT is here, a link
  -- that unlink failed to remove would already have stopped this process,
  -- and the sleep below would end it.
  local ev = process.events():receive()
  assert(ev.kind == "EXIT" and ev.from == pid, "exit event")
  time.sleep(1)
  local ok, err = process.link("<test.999999.1>")
  assert(not ok and err.kind == "not_found", "link to nothing: " .. tostring(err))
  return "ok"
end }`)
	h.Check(e)
}

func TestRegisterLookupAndService(t *testing.T) {
	h := newHarness(t)
	svc := h.Entry("worker", `
return { main = function(greeting)
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    msg:reply(greeting .. " " .. msg:payload())
  end
end }`, `args: ["hello"]`)
	inst, err := h.Kind.(*Host).Start(t.Context(), h.Env, svc, registry.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.Track(inst.PID())
	e := h.Entry("main", `
return { main = function()
  local v = assert(process.ask("test:worker", "greet", "world"))
  assert(v == "hello world", v)
  assert(process.register("me"))
  assert(process.lookup("me") == process.pid())
  local none, err = process.lookup("nobody")
  assert(none == nil and err.kind == "not_found")
  local ok, err2 = process.register("test:worker")
  assert(not ok and err2.kind == "invalid", "name taken: " .. tostring(err2))
  return "ok"
end }`)
	h.Check(e)
	if _, err := h.Node.Stop(t.Context(), inst.PID()); err != nil {
		t.Fatal(err)
	}
}

func TestTerminateStopsRunawayScript(t *testing.T) {
	h := newHarness(t)
	h.Entry("silent", `return { main = function() time.sleep(1000000) end }`)
	for _, tc := range []struct{ name, body string }{
		{"loop", `while true do end`},
		{"pcall_loop", `while true do pcall(function() while true do end end) end`},
		{"ignore_errors", `while true do process.inbox():receive() end`},
		{"sleep", `time.sleep(1000000)`},
		// an ask of a process that never answers (one of itself fails at once)
		{"ask", `process.ask(assert(process.spawn_linked("silent")), "x", nil, 1000000)`},
		{"coroutine_loop", `coroutine.wrap(function() while true do end end)()`},
		{"nested_coroutine_loop", `coroutine.resume(coroutine.create(function() coroutine.wrap(function() while true do end end)() end))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := h.Entry(tc.name, "return { main = function() "+tc.body+" end }")
			pid := h.Spawn(e)
			time.Sleep(20 * time.Millisecond)
			ctx, cancel := t.Context(), func() {}
			defer cancel()
			start := time.Now()
			ex, err := h.Node.Stop(ctx, pid)
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(ex.Err, process.ErrShutdown) {
				t.Fatalf("exit = %v, want shutdown", ex.Err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("took %s to stop", d)
			}
		})
	}
}

func TestExitErrorKeepsKind(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name, raise string
		kind        value.Kind
		msg         string // substring of the exit error
	}{
		{"error_value", `local _, err = process.send("nobody", "x") error(err)`, value.KindNotFound, "nobody"},
		{"error_table", `error({kind = "not_found", message = "gone"})`, value.KindNotFound, "gone"},
		{"table_unknown_kind", `error({kind = "nope", message = "odd"})`, value.KindInternal, "odd"},
		{"table_message_only", `error({message = "just this"})`, value.KindInternal, "just this"},
		{"string", `error("plain")`, value.KindInternal, "k_string.lua:1: plain"},
		// return nil, err fails the process as raising err does.
		{"returned_error_value", `local _, err = process.send("nobody", "x") return nil, err`, value.KindNotFound, "nobody"},
		{"returned_error_table", `return nil, {kind = "timeout", message = "late"}`, value.KindTimeout, "late"},
		{"returned_string", `return nil, "why"`, value.KindInternal, "why"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := h.Run(h.Entry("k_"+tc.name, "return { main = function() "+tc.raise+" end }"))
			if value.KindOf(ex.Err) != tc.kind || !strings.Contains(fmt.Sprint(ex.Err), tc.msg) {
				t.Fatalf("exit = %v (kind %s), want %s with %q", ex.Err, value.KindOf(ex.Err), tc.kind, tc.msg)
			}
		})
	}
}

// A method that returns a value, even with a second one, exits normally.
func TestReturnValuesExitNormally(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ name, ret string }{
		{"nothing", ``},
		{"value", `return 7`},
		{"value_and_error", `return 7, "ignored"`},
		{"nil_nil", `return nil, nil`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := h.Run(h.Entry("r_"+tc.name, "return { main = function() "+tc.ret+" end }"))
			if ex.Err != nil {
				t.Fatalf("exit = %v, want a normal exit", ex.Err)
			}
		})
	}
}

// exitHookModule installs, in the process that calls install(), the hooks
// TestOnExitHooks stored.
var (
	exitHookHooks  atomic.Pointer[[]func()]
	exitHookModule = Module{
		Name: "exithook_test",
		Doc:  "Test only: installs exit hooks.",
		Funcs: []Func{
			{Name: "install", Fn: func(L *lua.LState) int {
				p := ProcessOf(L)
				for _, fn := range *exitHookHooks.Load() {
					p.OnExit(fn)
				}
				return 0
			}, Doc: "Installs the test's hooks in this process."},
		},
	}
)

func TestOnExitHooks(t *testing.T) {
	var order []string
	done := make(chan struct{})
	exitHookHooks.Store(&[]func(){
		func() { order = append(order, "first"); close(done) },
		func() { order = append(order, "second") },
		func() { panic("a broken hook does not stop the others") },
	})
	h := newHarness(t)
	e := h.Entry("hooks", `require("exithook_test").install() return { main = function() error("raised") end }`)
	_ = h.Run(e)
	<-done
	if strings.Join(order, ",") != "second,first" {
		t.Fatalf("hooks ran as %v", order)
	}
}
