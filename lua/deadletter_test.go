package lua

import (
	"testing"

	"github.com/proctor-run/proctor/process"
)

// What a script sends that reaches no one is a dead letter: to a name no
// process holds, to a dead PID, and a reply after its ask ended.
func TestScriptDeadLetters(t *testing.T) {
	h := newHarness(t)
	h.Entry("server", `
return { main = function()
  local msg = process.inbox():receive()
  -- Far past the asker's 10 ms: a reply that finds the ask still
  -- waiting (its alarm late under load) is taken, as Erlang's receive
  -- takes a reply that came before its after-timer ran.
  time.sleep(500)
  process.send(msg:payload(), "settled", msg:reply("too late"))
  time.sleep(100000)
end }`)
	e := h.Entry("main", `
return { main = function()
  assert(not process.send("nobody", "hello"))
  assert(not process.ask("nobody", "question"))
  assert(not process.send("<test.999999.1>", "to-the-dead"))
  local srv = assert(process.spawn("server"))
  local _, err = process.ask(srv, "slow", process.pid(), "10ms")
  assert(err.kind == "timeout")
  assert(process.listen("settled"):receive():payload() == false)
  process.terminate(srv)
  return "ok"
end }`)
	h.Check(e)
	got := h.Dead.ByReason()
	if n := got[process.DeadNameNotFound]; len(n) != 2 || n[0].To != "nobody" || n[0].Topic != "hello" || n[1].Topic != "question" || n[0].From.IsZero() {
		t.Fatalf("unknown names: %+v", n)
	}
	if d := got[process.DeadNoProcess]; len(d) != 1 || d[0].To != "<test.999999.1>" || d[0].Topic != "to-the-dead" {
		t.Fatalf("dead pid: %+v", d)
	}
	if l := got[process.DeadLateReply]; len(l) != 1 || l[0].Topic != "slow" || l[0].To != got[process.DeadNameNotFound][0].From.String() || l[0].From.IsZero() {
		t.Fatalf("late reply: %+v", l)
	}
}

// A topic is a label: one past process.MaxTopicSize, or a destination past
// process.MaxNameSize, is refused at the send with a limit error, and no
// dead letter keeps it (a script that sent 64 MiB topics to a dead PID
// filled the ring with gigabytes and took the node down).
func TestScriptLongTopicsRefused(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("main", `
return { main = function()
  local topic = string.rep("t", 1025)
  local name = string.rep("n", 513)
  for _, f in ipairs({
    function() return process.send("<test.999999.1>", topic) end,
    function() return process.send("nobody", topic) end,
    function() return process.send(name, "t") end,
    function() return process.ask("<test.999999.1>", topic) end,
    function() return process.ask(name, "t") end,
    function() return process.listen(topic) end,
    function() return process.register(name) end,
  }) do
    local ok, err = f()
    assert(ok == nil and err.kind == "limit", tostring(err))
    assert(#err.message < 200, #err.message)
  end
  assert(not process.send("<test.999999.1>", string.rep("t", 1024)))
  return "ok"
end }`)
	h.Check(e)
	got := h.Dead.ByReason()
	if d := got[process.DeadNoProcess]; len(d) != 1 || len(d[0].Topic) != process.MaxTopicSize {
		t.Fatalf("dead letters: %d of no_process (want only the one at the bound), %d of name_not_found", len(d), len(got[process.DeadNameNotFound]))
	}
	if n := len(got[process.DeadNameNotFound]); n != 0 {
		t.Fatalf("%d dead letters of name_not_found", n)
	}
}

// An ask whose asker has stopped waiting (it timed out) is not handed to
// the script when it reaches the front of the mailbox: it is a dead letter
// with reason expired, whether the script reads it straight from the
// mailbox, after a listen receive set it aside, or on a listen channel of
// its topic. Tells around it, and a tell on the listened topic, still
// arrive. The server is kept from reading its mailbox by an ask of its
// own, so nothing here depends on timing but the asks' 10ms timeouts.
func TestExpiredAsksNeverReachTheScript(t *testing.T) {
	h := newHarness(t)
	h.Entry("server", `
return { main = function(boss)
  local inbox = process.inbox()
  assert(process.ask(boss, "ready1"))
  -- straight from the mailbox: the expired ask "slow1", then "after1"
  local m = inbox:receive()
  assert(m:topic() == "after1", "got " .. m:topic())
  -- set aside by a listen receive: "slow2" and "after2" wait in the inbox
  assert(process.ask(boss, "ready2"))
  assert(process.listen("go"):receive():topic() == "go")
  m = inbox:receive()
  assert(m:topic() == "after2", "got " .. m:topic())
  -- on a listen channel: the expired ask on "q", then a tell on "q"
  assert(process.ask(boss, "ready3"))
  m = process.listen("q"):receive()
  assert(m:payload() == "tell", "got " .. tostring(m:payload()))
  process.send(boss, "done", "ok")
  return "ok"
end }`)
	e := h.Entry("main", `
return { main = function()
  local inbox = process.inbox()
  -- linked: a failed assertion in the server ends the test at once
  local srv = assert(process.spawn_linked("server", process.pid()))
  local function expire(topic)
    local _, err = process.ask(srv, topic, nil, "10ms")
    assert(err and err.kind == "timeout", tostring(err))
  end
  local ready = inbox:receive()
  expire("slow1")
  assert(process.send(srv, "after1"))
  assert(ready:reply(true))
  ready = inbox:receive()
  expire("slow2")
  assert(process.send(srv, "after2"))
  assert(process.send(srv, "go"))
  assert(ready:reply(true))
  ready = inbox:receive()
  expire("q")
  assert(process.send(srv, "q", "tell"))
  assert(ready:reply(true))
  assert(inbox:receive():payload() == "ok")
  return "ok"
end }`)
	h.Check(e)
	got := h.Dead.ByReason()
	ex := got[process.DeadExpired]
	if len(ex) != 3 || ex[0].Topic != "slow1" || ex[1].Topic != "slow2" || ex[2].Topic != "q" || ex[0].From.IsZero() {
		t.Fatalf("expired asks: %+v", ex)
	}
	if l := got[process.DeadLateReply]; len(l) != 0 {
		t.Fatalf("late replies: %+v", l)
	}
}
