package lua

import (
	"errors"
	"reflect"
	"testing"
	"time"
	"unsafe"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// A received tell and its handle are one allocation of 64 bytes, an ask
// one of 72 (the 80-byte size class): the message is kept in the
// mailbox's form (process.Received), the converted payload in its own
// payload field, and only an ask has a reply state. With a Message and a
// field for each they were 136 (144) and 144.
func TestMessageSizeClass(t *testing.T) {
	if s := unsafe.Sizeof(luaMessage{}); s > 64 {
		t.Fatalf("luaMessage is %d bytes, over the 64-byte size class", s)
	}
	if s := unsafe.Sizeof(askMessage{}); s > 80 {
		t.Fatalf("askMessage is %d bytes, over the 80-byte size class", s)
	}
}

// msg:payload() gives the same table or error value on every call (it
// converts it once), a scalar equal each time, and an unconvertible value
// fails on every call. A Go payload that is itself a Lua value is not
// taken for a converted one. An ask whose payload was converted is still
// answered, and one left unanswered is still failed when its process
// ends.
func TestMessagePayloadConvertedOnce(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("payloads", `
return { main = function()
  local inbox = process.inbox()
  local m = inbox:receive()
  local t = m:payload()
  assert(type(t) == "table" and t.a == 1, "table payload")
  assert(m:payload() == t, "the same table on each call")
  t.b = 2
  assert(m:payload().b == 2, "a change to the table is kept")
  m = inbox:receive()
  local e = m:payload()
  assert(e ~= nil and m:payload() == e, "the same error value on each call")
  m = inbox:receive()
  assert(m:payload() == "s" and m:payload() == "s", "a string")
  m = inbox:receive()
  assert(m:payload() == 42 and m:payload() == 42, "a number")
  for _, what in ipairs({"a Go channel", "a Lua table from Go"}) do
    m = inbox:receive()
    local v, err = m:payload()
    assert(v == nil and err ~= nil, what .. " is refused")
    v, err = m:payload()
    assert(v == nil and err ~= nil, what .. " is refused again")
  end
  m = inbox:receive()
  local q = m:payload()
  assert(m:payload() == q and q[1] == "q")
  assert(m:reply(q[1] .. "!") == true)
  inbox:receive():payload() -- an ask left unanswered
end }`)
	pid := h.Spawn(e)
	send := func(payload any) {
		t.Helper()
		if err := h.Node.Send(pid, process.Message{Topic: "t", Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"a": 1.0})
	send(value.NewError(value.KindInvalid, "bad"))
	send("s")
	send(42.0)
	send(make(chan int))
	send(new(lua.LTable))
	reply, _, err := h.Node.Ask(pid, process.Message{Topic: "q", Payload: []any{"q"}}, time.Minute)
	if err != nil || reply != "q!" {
		t.Fatalf("ask: %v, %v", reply, err)
	}
	_, _, err = h.Node.Ask(pid, process.Message{Topic: "left", Payload: []any{"x"}}, time.Minute)
	var ve *value.Error
	if !errors.As(err, &ve) || ve.Kind != value.KindStopped {
		t.Fatalf("an ask the process left unanswered: %v", err)
	}
	if ex := h.Wait(pid, time.Minute); ex.Err != nil {
		t.Fatal(ex.Err)
	}
}

// A payload msg:payload() converted is the receiver's own table: sent on,
// asked with or replied with, the other side gets a copy of it as it was
// then, and later changes stay with the receiver. The sender's value is
// untouched.
func TestConvertedPayloadLeavesAsACopy(t *testing.T) {
	h := newHarness(t)
	sink := h.Entry("sink", `
return { main = function()
  local inbox = process.inbox()
  for i = 1, 2 do
    local m = inbox:receive()
    local p = m:payload()
    assert(p.a == 1 and p.mut == 1 and p.after == nil, "the copy as sent")
    p.sink = true
    if m:topic() == "ask" then assert(m:reply(p)) end
  end
end }`)
	fwd := h.Entry("fwd", `
return { main = function(sink)
  local m = process.inbox():receive()
  local p = m:payload()
  p.mut = 1
  assert(process.send(sink, "tell", p))
  local r = assert(process.ask(sink, "ask", m:payload(), 60000))
  assert(r.sink == true and m:payload().sink == nil, "the reply is a copy")
  local ok, err = process.send(sink, "tell", m)
  assert(not ok and err, "a message handle does not cross")
  assert(m:reply(p))
  p.after = true
end }`)
	sp := h.Spawn(sink)
	fp := h.Spawn(fwd, sp.String())
	payload := map[string]any{"a": 1.0}
	r, _, err := h.Node.Ask(fp, process.Message{Topic: "q", Payload: payload}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if rm, ok := r.(map[string]any); !ok || rm["mut"] != 1.0 || rm["after"] != nil || len(payload) != 1 {
		t.Fatalf("reply %v, sender's payload %v", r, payload)
	}
	for _, pid := range []process.PID{fp, sp} {
		if ex := h.Wait(pid, time.Minute); ex.Err != nil {
			t.Fatal(ex.Err)
		}
	}
}

// A reply that cannot be copied (a cycle, a function) settles the ask at
// once with an internal error that says why, the asker does not wait out
// its timeout; the script still gets nil, err (kind invalid), and a
// second reply finds the ask settled. A tell's reply is not an ask's: it
// only returns the error.
func TestReplyThatCannotBeCopiedSettlesTheAsk(t *testing.T) {
	h := newHarness(t)
	h.Entry("server", `
return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    local v = function() end
    if msg:topic() == "cycle" then v = {}; v.t = v end
    local ok, err = msg:reply({body = v})
    assert(ok == nil and err.kind == "invalid", tostring(ok) .. " " .. tostring(err))
    if msg:topic() == "tell" then
      assert(msg:from() and process.send(msg:from(), "told", err.message))
    else
      assert(msg:reply("again") == false)
    end
  end
end }`)
	e := h.Entry("main", `
return { main = function()
  local srv = assert(process.spawn_linked("server"))
  for _, topic in ipairs({"cycle", "fn"}) do
    local v, err = process.ask(srv, topic, nil, "3s")
    assert(v == nil and err.kind == "internal", tostring(err))
    assert(err.message:find("the reply cannot be copied: reply.body", 1, true), err.message)
    assert(err.cause and err.cause.kind == "invalid", tostring(err.cause))
  end
  assert(process.send(srv, "tell"))
  assert(process.listen("told"):receive():payload():find("reply.body", 1, true))
  process.unlink(srv)
  process.terminate(srv)
  return "ok"
end }`)
	h.Check(e)
}

// TestReplyIsARecordForAnAskerThatTakesOne: msg:reply gives a table as a
// value.Record to an asker whose call said it takes one
// (process.Call.AcceptRecord: an HTTP route), and as maps to every other.
func TestReplyIsARecordForAnAskerThatTakesOne(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("replier", `
return { main = function()
  local inbox = process.inbox()
  for _ = 1, 2 do
    local msg = inbox:receive()
    assert(msg:reply({status = 200, headers = {["x-a"] = "b"}, body = msg:payload()}))
  end
end }`)
	pid := h.Spawn(e)
	for _, record := range []bool{true, false} {
		c := process.NewCall()
		if record {
			c.AcceptRecord()
		}
		if err := h.Node.Send(pid, c.MessageWithin(process.Message{Topic: "t", Payload: "x"}, time.Minute)); err != nil {
			t.Fatal(err)
		}
		r, err := c.Wait(time.Minute, nil)
		if err != nil || r.Err != nil {
			t.Fatalf("ask: %v, %v", err, r.Err)
		}
		_, isRecord := r.Value.(value.Record)
		_, isMap := r.Value.(map[string]any)
		if isRecord != record || isMap == record {
			t.Fatalf("accepting a record %v: reply %T", record, r.Value)
		}
		cp, err := value.Copy(r.Value)
		want := map[string]any{"status": 200.0, "headers": map[string]any{"x-a": "b"}, "body": "x"}
		if err != nil || !reflect.DeepEqual(cp, want) {
			t.Fatalf("reply %#v, want %#v", cp, want)
		}
	}
	if ex := h.Wait(pid, time.Minute); ex.Err != nil {
		t.Fatal(ex.Err)
	}
}
