package lua

import (
	"math/rand/v2"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

func TestChannels(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("main", `
return { main = function()
  local ch = channel.new()
  assert(ch:send(1)); assert(ch:send({x = 2})); assert(ch:send(nil))
  local v, ok = ch:receive()
  assert(v == 1 and ok)
  v = ch:receive()
  assert(v.x == 2)
  v, ok = ch:receive()
  assert(v == nil and ok, "nil is a value")

  local b = channel.new(1)
  assert(b:send("a"))
  local sent, err = b:send("b")
  assert(sent == nil and err.kind == "limit", "full: " .. tostring(err))

  -- select: first ready case in order, default when none
  local c1, c2 = channel.new(), channel.new()
  c2:send("two")
  local r = channel.select{ c1:case_receive(), c2:case_receive() }
  assert(r.channel == c2 and r.value == "two" and r.ok)
  r = channel.select{ c1:case_receive(), default = true }
  assert(r.default)
  r = channel.select{ b:case_send("x"), c1:case_send("y") }
  assert(r.channel == c1 and r.ok, "b is full, c1 takes the send")
  assert(c1:receive() == "y")

  -- close: drain, then nil, false
  c1:send("last")
  c1:close()
  v, ok = c1:receive()
  assert(v == "last" and ok)
  v, ok = c1:receive()
  assert(v == nil and not ok)
  r = channel.select{ c1:case_receive() }
  assert(r.channel == c1 and not r.ok)
  assert(not pcall(c1.send, c1, 1), "send on closed raises")

  -- waiting on a channel nothing else can fill raises instead of hanging
  local empty = channel.new()
  local good, msg = pcall(empty.receive, empty)
  assert(not good and tostring(msg):find("forever"), tostring(msg))
  good, msg = pcall(channel.select, { empty:case_receive() })
  assert(not good and tostring(msg):find("forever"), tostring(msg))
  assert(not pcall(channel.select, {}), "empty select raises")
  assert(not pcall(channel.select, { 42 }), "bad case raises")
  assert(not pcall(process.inbox().close, process.inbox()), "inbox cannot be closed")
  assert(tostring(process.inbox()) == "channel(inbox)")
  return "ok"
end }`)
	h.Check(e)
}

func TestSelectAcrossSources(t *testing.T) {
	h := newHarness(t)
	h.Entry("sender", `return { main = function(to, topic, delay) time.sleep(delay) process.send(to, topic, topic .. "!") end }`)
	e := h.Entry("main", `
return { main = function()
  local inbox = process.inbox()
  local orders = process.listen("order")
  local events = process.events()
  local me = process.pid()
  local a = process.spawn_monitored("sender", me, "order", 10)
  local b = process.spawn("sender", me, "other", 30)
  local timer = time.after(2000)
  local got = {}
  while #got < 3 do
    local r = channel.select{ orders:case_receive(), inbox:case_receive(), events:case_receive(), timer:case_receive() }
    assert(r.channel ~= timer, "timed out with " .. table.concat(got, ","))
    if r.channel == orders then table.insert(got, "order:" .. r.value:payload())
    elseif r.channel == inbox then table.insert(got, "inbox:" .. r.value:payload())
    elseif r.channel == events then table.insert(got, "event:" .. r.value.kind) end
  end
  table.sort(got)
  local s = table.concat(got, ",")
  assert(s == "event:EXIT,inbox:other!,order:order!", s)
  return "ok"
end }`)
	h.Check(e)
}

func TestListenKeepsOtherTopicsInInbox(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("main", `
return { main = function()
  local me = process.pid()
  process.send(me, "a", 1)
  process.send(me, "b", 2)
  process.send(me, "a", 3)
  local b = process.listen("b")
  local m = b:receive()
  assert(m:topic() == "b" and m:payload() == 2)
  local inbox = process.inbox()
  assert(inbox:receive():payload() == 1)
  assert(inbox:receive():payload() == 3)
  process.send(me, "b", 4)
  process.send(me, "c", 5)
  m = inbox:receive()
  assert(m:topic() == "c", "listened topics skip the inbox, got " .. m:topic())
  assert(b:receive():payload() == 4)
  return "ok"
end }`)
	h.Check(e)
}

// TestListenAfterMessagesWereSetAside: a receive on one listen channel
// sets other topics' messages aside in the inbox; a listen opened later for
// one of those topics must still get them, in order, and the inbox not.
func TestListenAfterMessagesWereSetAside(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("main", `
return { main = function()
  local me = process.pid()
  process.send(me, "b", 1)
  process.send(me, "c", 2)
  process.send(me, "b", 3)
  process.send(me, "a", 4)
  assert(process.listen("a"):receive():payload() == 4)
  local b = process.listen("b")
  local r = channel.select{ b:case_receive(), default = true }
  assert(not r.default, "the b message set aside before listen('b') did not reach it")
  assert(r.value:payload() == 1)
  assert(b:receive():payload() == 3)
  local inbox = process.inbox()
  local m = inbox:receive()
  assert(m:topic() == "c" and m:payload() == 2, "inbox got " .. m:topic())
  r = channel.select{ inbox:case_receive(), default = true }
  assert(r.default, "inbox holds a message listen('b') claims")
  return "ok"
end }`)
	h.Check(e)
}

// TestDurationBounds: a huge number of milliseconds is "forever", not an
// overflow into a negative duration that fires at once; NaN raises.
func TestDurationBounds(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("main", `
return { main = function()
  local never = time.after(math.huge)
  local soon = time.after(30)
  local r = channel.select{ never:case_receive(), soon:case_receive() }
  assert(r.channel == soon, "time.after(math.huge) fired")
  never = time.after(1e300)
  r = channel.select{ never:case_receive(), time.after(30):case_receive() }
  assert(r.channel ~= never, "time.after(1e300) fired")
  local v, err = process.ask("nobody", "x", nil, math.huge)
  assert(v == nil and err.kind == "not_found", tostring(err))
  for _, call in ipairs{
    function() time.sleep(0/0) end,
    function() time.after(0/0) end,
    function() process.ask("nobody", "x", nil, 0/0) end,
    function() time.sleep(-1) end,
  } do
    local ok, msg = pcall(call)
    assert(not ok and tostring(msg):find("bad argument"), tostring(msg))
  end
  return "ok"
end }`)
	h.Check(e)
}

// feedModule hands a script a channel that a goroutine fills with n items,
// each after a short random pause, as a subscription would.
var feedModule = Module{
	Name: "feedtest",
	Doc:  "Test only: a channel fed from another goroutine.",
	Funcs: []Func{{Name: "start", Doc: "A channel that receives 1..n from a goroutine.", Params: "n: integer", Results: "channel",
		Fn: func(L *lua.LState) int {
			p := ProcessOf(L)
			n := L.CheckInt(1)
			c := p.NewChannel(0)
			go func() {
				for i := 1; i <= n; i++ {
					if i%64 == 0 {
						time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
					}
					c.Offer(float64(i))
				}
				c.Close()
			}()
			L.Push(c.Value(L))
			return 1
		}}},
}

// A process parks on one wake-up, the core's, whatever it waits for: items
// offered by Go code from other goroutines, mail from other processes,
// timers and events all wake it, however they race with its parking. A
// wake-up lost on any source hangs the script.
func TestOneParkWakesForEverySource(t *testing.T) {
	h := newHarnessWith(t, Options{Modules: []Module{feedModule}})
	h.Entry("sender", `
return { main = function(dest, n)
  for i = 1, n do
    assert(process.send(dest, "m", i))
    if i % 50 == 0 then time.sleep(1) end
  end
end }`)
	e := h.Entry("main", `
return { main = function(n)
  local fed = require("feedtest").start(n)
  local inbox, events = process.inbox(), process.events()
  assert(process.spawn_monitored("sender", process.pid(), n))
  local got, mail, exited, ticks = 0, 0, false, 0
  local tick = time.after(1)
  local fed_open = true
  while fed_open or mail < n or not exited do
    local cases = { inbox:case_receive(), events:case_receive(), tick:case_receive() }
    if fed_open then table.insert(cases, 1, fed:case_receive()) end
    local r = channel.select(cases)
    if r.channel == fed then
      if r.ok then got = got + 1 else fed_open = false end
    elseif r.channel == inbox then
      mail = mail + 1
    elseif r.channel == events then
      assert(r.value.kind == "EXIT" and r.value.result.error == nil)
      exited = true
    else
      ticks = ticks + 1
      tick = time.after(1)
    end
    -- receive alone too, not only in select
    if mail < n and mail % 100 == 99 then inbox:receive(); mail = mail + 1 end
  end
  assert(got == n, "fed items " .. got)
  -- and a timer alone, with nothing else to come
  local r = channel.select{ inbox:case_receive(), events:case_receive(), time.after(5):case_receive() }
  assert(r.channel ~= inbox and r.channel ~= events)
  return "ok"
end }`)
	// A lost wake-up shows as the script not returning (Run's deadline).
	h.Check(e, float64(2000))
}
