package lua

import (
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// init runs first, on the new process; spawn returns once it has, so what
// init did (register a name) is visible at once, and main gets what init
// returned.
func TestSpawnWaitsForInit(t *testing.T) {
	h := newHarness(t)
	h.Entry("room", `
return {
  init = function(name, size)
    time.sleep(30) -- the spawner waits
    assert(process.register("room." .. name))
    return name, size * 2, {ready = true}
  end,
  main = function(name, double, t)
    local msg = process.inbox():receive()
    msg:reply({name = name, double = double, ready = t.ready})
  end,
}`)
	h.Check(h.Entry("main", `
return { main = function()
  for i = 1, 20 do
    local pid = assert(process.spawn("room", "r" .. i, i))
    assert(process.lookup("room.r" .. i) == pid, "registered by init before spawn returned")
  end
  local got, err = process.ask("room.r3", "state")
  assert(err == nil and got.name == "r3" and got.double == 6 and got.ready, tostring(err))
  return "ok"
end }`))
}

// An init that raises fails the start with its error, which the spawner
// gets; the process is gone (its name free) and a linked spawner lives on.
func TestInitFailureFailsTheStart(t *testing.T) {
	h := newHarness(t)
	h.Entry("picky", `
local errors = require("errors")
return {
  init = function(size)
    if size < 1 then error(errors.new("invalid", "size must be at least 1")) end
    if size > 99 then error("too big") end
    return size
  end,
  main = function(size) time.sleep(100000) end,
}`)
	h.Entry("broken", `local x = nil; x.y = 1; return { init = function() end, main = function() end }`)
	h.Check(h.Entry("main", `
return { main = function()
  local spawner = process.with_options{name = "picky.one"}
  local pid, err = spawner:spawn_linked("picky", 0)
  assert(pid == nil and err.kind == "invalid" and err.message:find("size must be at least 1", 1, true), tostring(err))
  assert(process.lookup("picky.one") == nil, "the failed process's name is free")
  local pid2, err2 = process.spawn_monitored("picky", 100)
  assert(pid2 == nil and err2.kind == "internal" and err2.message:find("too big", 1, true), tostring(err2))
  local pid3, err3 = process.spawn("broken")
  assert(pid3 == nil and err3.message:find("broken.lua:1", 1, true), tostring(err3))
  -- the name is free again, and a good start takes it
  local ok = assert(spawner:spawn("picky", 5))
  assert(process.lookup("picky.one") == ok)
  -- a name another process holds fails the start
  local dup, derr = spawner:spawn("picky", 5)
  assert(dup == nil and derr.kind == "invalid" and derr.message:find('"picky.one"', 1, true), tostring(derr))
  -- no EXIT for the failed monitored start
  local ev = process.events()
  local r = channel.select{ev:case_receive(), time.after(50):case_receive()}
  assert(r.channel ~= ev, "an EXIT came for a start that failed")
  process.terminate(ok)
  return "ok"
end }`))
	if logs := h.Logs.String(); !strings.Contains(logs, `error="invalid: size must be at least 1"`) {
		t.Fatalf("the failed init is not reported:\n%s", logs)
	}
}

// An init still running after the start timeout fails the start with a
// timeout, and the process is killed.
func TestInitTimeout(t *testing.T) {
	h := newHarness(t)
	h.Entry("slow", `return { init = function() time.sleep(100000) end, main = function() end }`)
	e := h.Known("test:slow")
	e.Lifecycle.StartTimeout = 100 * time.Millisecond
	before := h.Node.Count()
	start := time.Now()
	_, err := h.Kind.Spawn(h.Env, e, registry.SpawnOptions{})
	if value.KindOf(err) != value.KindTimeout || !strings.Contains(err.Error(), "init did not return within 100ms") {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("the start took %s", took)
	}
	testutil.EventuallyWithin(t, 5*time.Second, "the slow process gone", func() bool { return h.Node.Count() == before })
}

// A script without init (by its shape) is not waited for; one whose shape
// hides what it defines is, but without init main gets the arguments.
func TestNoInitNoWait(t *testing.T) {
	h := newHarness(t)
	h.Entry("plain", `return { main = function(a) process.inbox():receive():reply(a) end }`)
	h.Entry("opaque", `
local M = setmetatable({}, {__index = {main = function(a) process.inbox():receive():reply(a) end}})
return M`)
	h.Check(h.Entry("main", `
return { main = function()
  for _, id in ipairs{"plain", "opaque"} do
    local pid = assert(process.spawn(id, id))
    assert(process.ask(pid, "q") == id, id)
  end
  return "ok"
end }`))
	if h.Known("test:plain").Spec.(*Spec).mayInit() || !h.Known("test:opaque").Spec.(*Spec).mayInit() {
		t.Fatal("mayInit")
	}
}

// An ask to a process that dies fails at once with kind stopped naming
// the exit: the ask it held and those queued behind it.
func TestAskToAProcessThatDies(t *testing.T) {
	h := newHarness(t)
	h.Entry("fragile", `
return { main = function()
  local inbox = process.inbox()
  local held = inbox:receive()      -- held, never answered
  local gate = inbox:receive()      -- the order to crash
  error("crashed on purpose")
end }`)
	h.Entry("asker", `
return { main = function(target, parent)
  local v, err = process.ask(target, "q", nil, "60s")
  process.send(parent, "result", {kind = err and err.kind, message = err and err.message,
    cause = err and err.cause and err.cause.message})
end }`)
	h.Check(h.Entry("main", `
return { main = function()
  local target = assert(process.spawn("fragile"))
  local results = process.listen("result")
  assert(process.spawn("asker", target, process.pid()))      -- held by fragile
  time.sleep(50)
  process.send(target, "crash")
  for i = 1, 3 do assert(process.spawn("asker", target, process.pid())) end -- queued or too late
  local started = time.now()
  for i = 1, 4 do
    local r = results:receive():payload()
    assert(r.kind == "stopped" or r.kind == "not_found", r.kind)
    if r.kind == "stopped" then
      assert(r.message:find("exited before it replied: internal:", 1, true) and r.message:find("crashed on purpose", 1, true), r.message)
      assert(r.cause:find("crashed on purpose", 1, true))
    end
  end
  assert(time.now() - started < 30000, "the asks waited for their timeout")
  return "ok"
end }`))
}

// A process that returns with asks it never answered, set aside for a
// listen channel, fails them as it ends.
func TestAsksLeftAtNormalExitFail(t *testing.T) {
	h := newHarness(t)
	pid := h.Spawn(h.Entry("quitter", `
return { main = function()
  local job = process.listen("job")
  job:receive()                       -- the first job, a tell
  process.inbox():receive()           -- sets the next jobs aside, returns at "other"
  return "done"
end }`))
	n := h.Node
	if err := n.Send(pid, process.Message{Topic: "job", Payload: 0.0}); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	n.AskFunc(pid, process.Message{Topic: "job", Payload: 1.0}, time.Minute, func(_ any, _ process.PID, err error) { got <- err })
	testutil.EventuallyWithin(t, 10*time.Second, "the ask set aside", func() bool { return n.MailboxLen(pid) == 0 && n.Idle(pid) })
	if err := n.Send(pid, process.Message{Topic: "other"}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if value.KindOf(err) != value.KindStopped || !strings.Contains(err.Error(), "(normal)") {
			t.Fatalf("the set-aside ask failed with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the set-aside ask still waits")
	}
}
