package router_test

import (
	"context"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/kinds/pool"
	"github.com/proctor-run/proctor/lua/internal/luatest"
	"github.com/proctor-run/proctor/lua/modules/internal/modtest"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

func TestMain(m *testing.M) { luatest.Main(m) }

// routerReplica answers {op=…} payloads: echo (after delay ms), fail
// (rejects the ask), hang (sleeps past the pool's timeout), crash.
const routerReplica = `
return { main = function()
  local inbox = process.inbox()
  while true do
    local m = inbox:receive()
    local p = m:payload()
    local op = type(p) == "table" and p.op or "echo"
    if op == "crash" then error("told to crash") end
    if type(p) == "table" and p.delay then time.sleep(p.delay) end
    if op == "fail" then
      m:reply(nil, {kind = "not_found", message = "miss at " .. process.pid()})
    elseif op == "hang" then
      time.sleep(600)
    else
      m:reply({pid = process.pid(), payload = p, topic = m:topic()})
    end
  end
end }
`

const routerConfig = `
namespace: app
entries:
  - {name: replica, kind: process.lua, source: file://replica.lua}
  - {name: main, kind: process.lua, source: file://main.lua}
  - name: rr
    kind: router.pool
    lifecycle: {auto_start: true}
    routee: replica
    size: 3
  - name: sg
    kind: router.pool
    lifecycle: {auto_start: true}
    routee: replica
    size: 3
    strategy: scatter_gather_first_completed
    timeout: 300ms
  - name: ch
    kind: router.pool
    lifecycle: {auto_start: true}
    routee: replica
    size: 4
    strategy: consistent_hash
  - name: tc
    kind: router.pool
    lifecycle: {auto_start: true}
    routee: replica
    size: 3
    strategy: tail_chopping
    timeout: 300ms
    interval: 20ms
`

const routerMain = `
local router = require("router")

local function wait_until(what, f)
  local deadline = time.now() + 5000
  while not f() do
    if time.now() > deadline then error("timed out waiting for " .. what) end
    time.sleep(2)
  end
end

local function member(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

return { main = function()
  -- size and routees
  assert(router.size("app:rr") == 3, "size")
  local rs = router.routees("rr")
  assert(#rs == 3 and type(rs[1]) == "string", "routees")

  -- ask: the reply comes from a routee, and the sender is that routee
  local seen = {}
  for i = 1, 6 do
    local reply, err, from = router.ask("rr", {n = i})
    assert(reply and err == nil, tostring(err))
    assert(reply.pid == from and member(rs, from), "sender is the routee")
    assert(reply.payload.n == i and reply.topic == "message")
    seen[from] = (seen[from] or 0) + 1
  end
  for _, pid in ipairs(rs) do assert(seen[pid] == 2, "round robin spread") end
  assert(router.tell("rr", "fire and forget") == true)

  -- the pool's own name routes too
  local r2, _, f2 = process.ask("app:rr", "direct", "x", 2000)
  assert(r2 and member(rs, f2) and r2.topic == "direct", "process.ask to the pool")

  -- a crashed routee is restarted in place; the pool keeps routing
  local before = router.routees("rr")
  assert(router.tell("rr", {op = "crash"}))
  wait_until("the routee restarted", function()
    local now = router.routees("rr")
    if #now ~= 3 then return false end
    local changed = 0
    for i = 1, 3 do if now[i] ~= before[i] then changed = changed + 1 end end
    return changed == 1
  end)
  for i = 1, 3 do assert(router.ask("rr", i)) end

  -- scatter/gather: the winner is attributed to its routee
  local sgr = router.routees("sg")
  local reply, _, from = router.ask("sg", "user-42")
  assert(reply and reply.payload == "user-42" and reply.pid == from and member(sgr, from), "scatter winner")

  -- all failed: one aggregate, one error per routee in scatter order
  local none, err = router.ask("sg", {op = "fail"})
  assert(none == nil and err.kind == "aggregate", tostring(err))
  assert(err.message == "all 3 routees failed", err.message)
  assert(#err.errors == 3, "three members")
  for i, e in ipairs(err.errors) do
    assert(e.kind == "not_found" and e.message == "miss at " .. sgr[i], "member " .. i .. ": " .. tostring(e))
  end

  -- a plain send to a scatter pool is dropped, never a crash
  assert(router.tell("sg", "nobody listens") == true)
  assert(router.ask("sg", "still serving"))

  -- consistent hash: one key, one routee; the key field of a table
  local _, _, owner = router.ask("ch", "alice")
  for i = 1, 5 do
    local _, _, o = router.ask("ch", {key = "alice", n = i})
    assert(o == owner, "key alice moved")
  end
  local nokey, kerr = router.ask("ch", {nokey = true})
  assert(nokey == nil and kerr.kind == "invalid", tostring(kerr))

  -- tail chopping answers, from a routee
  local tr, _, tf = router.ask("tc", "t")
  assert(tr and member(router.routees("tc"), tf))

  -- errors
  local n, nerr = router.size("app:nope")
  assert(n == nil and nerr.kind == "not_found", tostring(nerr))
  local w, werr = router.size("replica")
  assert(w == nil and werr.kind == "invalid", tostring(werr))
  assert(not pcall(router.ask, {}), "a table as pool id must raise")
  assert(not pcall(router.ask, "sg", "x", -5), "a negative timeout must raise")
  local bad, berr = router.tell("rr", function() end)
  assert(bad == nil and berr.kind == "invalid", "a function cannot cross: " .. tostring(berr))

  -- timeout: the aggregate error, heard because the caller outlives the pool
  local t0 = time.now()
  local hung, terr = router.ask("sg", {op = "hang"})
  assert(hung == nil and terr.kind == "aggregate", tostring(terr))
  assert(terr.message == "none of 3 routees replied within 300ms", terr.message)
  for _, e in ipairs(terr.errors) do assert(e.kind == "timeout") end
  assert(time.now() - t0 < 3000, "the caller waited for the pool, not its own default")

  -- a routee that raises while it holds an ask fails it at once, naming
  -- its exit; a scatter counts it as failed and moves on
  t0 = time.now()
  local c, cerr = router.ask("rr", {op = "crash"})
  assert(c == nil and cerr.kind == "stopped" and cerr.message:find("told to crash", 1, true), tostring(cerr))
  assert(time.now() - t0 < 3000, "the crashed routee's ask waited for its timeout")
  time.sleep(700) -- the sg routees finish the hang above (600ms) first
  local sc, serr = router.ask("sg", {op = "crash"})
  assert(sc == nil and serr.message == "all 3 routees failed", tostring(serr))
  for _, e in ipairs(serr.errors) do assert(e.kind == "stopped" and e.cause.message:find("told to crash", 1, true), tostring(e)) end
  return "ok"
end }
`

func TestLuaRouter(t *testing.T) {
	rt, node, stop := modtest.Runtime(t, map[string]string{"config.yaml": routerConfig, "replica.lua": routerReplica, "main.lua": routerMain})
	defer stop()
	if e := modtest.RunMain(t, rt, node, 30*time.Second); e.Err != nil || e.Value != "ok" {
		t.Fatalf("main: %v %v", e.Value, e.Err)
	}
}

const routerStopConfig = `
namespace: app
entries:
  - {name: replica, kind: process.lua, source: file://replica.lua}
  - {name: main, kind: process.lua, source: file://main.lua}
  - name: sg
    kind: router.pool
    lifecycle: {auto_start: true}
    routee: replica
    size: 2
    strategy: scatter_gather_first_completed
    timeout: 1h
`

// Stopping the pool fails the scatter a Lua caller waits on, at once.
func TestLuaRouterStopFailsOpenScatter(t *testing.T) {
	main := `
local router = require("router")
return { main = function()
  local r, err = router.ask("sg", {op = "hang"}, "2h")
  assert(r == nil and err.kind == "aggregate", tostring(err))
  assert(#err.errors == 0, "no members")
  return err.message
end }
`
	rt, node, stop := modtest.Runtime(t, map[string]string{"config.yaml": routerStopConfig, "replica.lua": routerReplica, "main.lua": main})
	defer stop()
	inst, ok := rt.Instance("app:sg")
	if !ok {
		t.Fatal("pool not running")
	}
	p := inst.(*pool.Pool)
	pid, err := rt.Spawn("app:main", registry.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done, exit, _ := node.Done(pid)
	testutil.EventuallyWithin(t, 5*time.Second, "the scatter to open", func() bool { return p.View().(pool.View).OpenScatters == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the Lua caller still waits")
	}
	if e := exit(); e.Err != nil || e.Value != "stopped while the scatter was still open" {
		t.Fatalf("main: %v %v", e.Value, e.Err)
	}
}

const routerResizeConfig = `
namespace: app
entries:
  - {name: slow, kind: process.lua, source: file://slow.lua}
  - {name: main, kind: process.lua, source: file://main.lua}
  - name: elastic
    kind: router.pool
    lifecycle: {auto_start: true}
    routee: slow
    strategy: round_robin
    resizer: {type: default, lower_bound: 1, upper_bound: 3, messages_per_resize: 5}
`

// Lua routees: the pool grows under load, every accepted message is
// processed, and it shrinks back when idle (removed routees finish first).
func TestLuaRouterResizes(t *testing.T) {
	slow := `
return { main = function()
  local inbox = process.inbox()
  while true do
    local m = inbox:receive()
    time.sleep(3)
    if m:payload() == "count" then m:reply(true) end
    process.send("counter", "done", 1)
  end
end }
`
	main := `
local router = require("router")
return { main = function()
  assert(process.register("counter")) -- names with ":" are the entries'
  assert(router.size("elastic") == 1, "starts at the lower bound")
  local sent, done, grew = 0, 0, false
  local inbox = process.listen("done")
  while sent < 300 do
    assert(router.tell("elastic", sent))
    sent = sent + 1
    if router.size("elastic") == 3 then grew = true end
    time.sleep(1) -- about 1000 messages/s; one routee handles about 300/s
  end
  assert(grew, "the pool never reached its upper bound under load")
  while done < sent do
    local m = inbox:receive()
    done = done + 1
  end
  local deadline = time.now() + 10000
  while router.size("elastic") > 1 do
    if time.now() > deadline then error("never shrank") end
    time.sleep(20)
  end
  return done
end }
`
	rt, node, stop := modtest.Runtime(t, map[string]string{"config.yaml": routerResizeConfig, "slow.lua": slow, "main.lua": main})
	defer stop()
	if e := modtest.RunMain(t, rt, node, 30*time.Second); e.Err != nil || e.Value != 300.0 {
		t.Fatalf("main: %v %v", e.Value, e.Err)
	}
	inst, _ := rt.Instance("app:elastic")
	p := inst.(*pool.Pool)
	// Left: the pool, its one routee, the root supervisor.
	testutil.EventuallyWithin(t, 5*time.Second, "the removed routees to stop", func() bool { return node.Count() == 2+1 })
	if s := p.Size(); s != 1 {
		t.Fatalf("size %d once idle", s)
	}
}

// The resizers count a routee busy while it handles a message or has mail
// waiting (pool.loads: MailboxLen > 0 or not Node.Idle), as Akka counts an
// actor with a current message. One closed-loop client keeps at most one
// routee handling a message at a time, so across many looks at a pool of 8
// the routees seen busy average below one (0.6–0.9 here, idle or with two
// CPU hogs). A routee that had replied and waited in the run queue to look
// for mail again (its spin before it suspends) counted as busy: on the
// loaded machine the looks averaged 4.2 of 8 (1.4 idle, under -race), and
// the optimal-size resizer took the pool for fully utilized and explored
// upward (to 9–12) instead of downsizing. The mean, unlike the highest
// seen, holds on a loaded machine: a preempted routee inflates a look or
// two, not the average. The spin itself is TestLookingProcessIsIdle's
// (package process), deterministically.
func TestLuaOptimalResizerCountsWhatAkkaCounts(t *testing.T) {
	config := `
namespace: app
entries:
  - {name: replica, kind: process.lua, source: file://replica.lua}
  - name: elastic
    kind: router.pool
    lifecycle: {auto_start: true}
    routee: replica
    size: 8
    strategy: round_robin
  - name: client
    kind: process.lua
    source: file://client.lua
    lifecycle: {auto_start: true, depends_on: [elastic]}
`
	replica := `
return { main = function()
  local inbox = process.inbox()
  while true do
    local m = inbox:receive()
    local s = 0
    for i = 1, 2000 do s = s + i end
    m:reply(s)
  end
end }
`
	client := `
local router = require("router")
return { main = function()
  while true do
    local _, err = router.ask("elastic", 1)
    if err then time.sleep(5) end
  end
end }
`
	rt, node, stop := modtest.Runtime(t, map[string]string{"config.yaml": config, "replica.lua": replica, "client.lua": client})
	defer stop()
	inst, _ := rt.Instance("app:elastic")
	p := inst.(*pool.Pool)
	var pids []process.PID
	for _, s := range p.Routees() {
		pid, err := process.ParsePID(s)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 8 {
		t.Fatalf("%d routees, want 8", len(pids))
	}
	const looks = 2000
	busy := 0
	for range looks {
		for _, pid := range pids {
			if node.MailboxLen(pid) > 0 || !node.Idle(pid) {
				busy++
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
	mean := float64(busy) / looks
	t.Logf("one closed-loop client: %.2f of 8 routees busy on average", mean)
	if mean > 2 {
		t.Fatalf("one closed-loop client: %.2f of 8 routees busy on average, want about one", mean)
	}
}

// The seed's second reply form: a tell with an explicit reply target. The
// pool scatters it as an ask and the outcome arrives at reply_to as a
// message from the routee that won; the caller never blocks. A plain pool
// forwards its routee's reply the same way, and process.send takes the
// same options.
func TestLuaRouterTellWithReplyTo(t *testing.T) {
	main := `
local router = require("router")

local function member(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

return { main = function()
  local replies = process.listen("reply")
  local sgr = router.routees("sg")

  -- a hedged read that does not block: the winner's reply, from the winner
  assert(router.tell("sg", "user-42", {reply_to = process.pid()}) == true)
  local m = replies:receive()
  local p = m:payload()
  assert(p.value and p.value.payload == "user-42" and p.error == nil, "the winner's reply")
  assert(m:from() == p.value.pid and member(sgr, m:from()), "msg:from() is the routee that won")

  -- all failed: the aggregate, as {error = err}, on a topic of the caller's
  local custom = process.listen("lookup.result")
  assert(router.tell("sg", {op = "fail"}, {reply_to = process.pid(), topic = "lookup.result"}))
  local f = custom:receive():payload()
  assert(f.value == nil and f.error.kind == "aggregate" and f.error.message == "all 3 routees failed", tostring(f.error))
  assert(#f.error.errors == 3)

  -- to a registered name
  assert(process.register("collector"))
  assert(router.tell("sg", "by name", {reply_to = "collector"}))
  assert(replies:receive():payload().value.payload == "by name")

  -- a round-robin pool forwards its routee's reply
  assert(router.tell("rr", {n = 7}, {reply_to = process.pid()}))
  local r = replies:receive()
  assert(r:payload().value.payload.n == 7 and member(router.routees("rr"), r:from()))

  -- process.send to a pool (or any process) takes the same options
  assert(process.send("app:sg", "direct", "x", {reply_to = process.pid()}))
  assert(replies:receive():payload().value.topic == "direct")

  -- without reply_to a tell to a scatter pool is still dropped
  assert(router.tell("sg", "nobody listens") == true)

  -- options of the wrong kind raise
  assert(not pcall(router.tell, "sg", "x", {reply_to = 42}), "a number as reply_to must raise")
  assert(not pcall(router.tell, "sg", "x", {reply_too = process.pid()}), "an unknown option must raise")
  assert(not pcall(router.tell, "sg", "x", {topic = "t"}), "topic without reply_to must raise")
  assert(not pcall(router.tell, "sg", "x", "opts"), "a string as options must raise")
  local long, lerr = router.tell("sg", "x", {reply_to = process.pid(), topic = string.rep("t", 2000)})
  assert(long == nil and lerr.kind == "limit" and lerr.message:find("option topic", 1, true), "a reply topic is a label, bounded: " .. tostring(lerr))
  assert(not pcall(router.tell, "sg", "x", {reply_to = ""}), "an empty reply_to must raise")
  assert(not pcall(router.tell, "sg", "x", {reply_to = process.pid(), topic = ""}), "an empty topic must raise")
  for _, bad in ipairs({"@", "a@", "@b", "a@b@c"}) do
    local ok, e = router.tell("sg", "x", {reply_to = bad})
    assert(ok == nil and e.kind == "invalid", "reply_to " .. bad .. ": " .. tostring(e))
  end
  local bad, berr = router.tell("sg", "x", {reply_to = "<vm.x.y>"})
  assert(bad == nil and berr.kind == "invalid", "a malformed PID is an invalid error: " .. tostring(berr))
  return "ok"
end }
`
	rt, node, stop := modtest.Runtime(t, map[string]string{"config.yaml": routerConfig, "replica.lua": routerReplica, "main.lua": main})
	defer stop()
	if e := modtest.RunMain(t, rt, node, 30*time.Second); e.Err != nil || e.Value != "ok" {
		t.Fatalf("main: %v %v", e.Value, e.Err)
	}
}

// Every function of the runtime's API raises on an argument of the wrong
// type, as docs/lua say; a number is no entry ID, topic or name (it was
// taken for the string "123" and failed later as not_found).
func TestWrongArgumentTypesRaise(t *testing.T) {
	main := `
local router = require("router")
local pg = require("pg")
local supervisor = require("supervisor")
return { main = function()
  local calls = {
    {"router.ask", router.ask, 123, "x"},
    {"router.tell", router.tell, 123, "x"},
    {"router.size", router.size, {}},
    {"router.routees", router.routees, true},
    {"process.spawn", process.spawn, 7},
    {"process.spawn_linked", process.spawn_linked, 7},
    {"process.send topic", process.send, process.pid(), 42},
    {"process.ask topic", process.ask, "app:rr", 42},
    {"process.register", process.register, 5},
    {"process.lookup", process.lookup, 5},
    {"process.listen", process.listen, 5},
    {"process.send dest", process.send, 42, "x"},
    {"pg.open", pg.open, 1},
    {"supervisor.which_children", supervisor.which_children, 1},
    {"supervisor.route", supervisor.route, 1, "k"},
    {"spawner:with_name", function(n) return process.with_options({}):with_name(n) end, 1},
  }
  for _, c in ipairs(calls) do
    local ok, err = pcall(c[2], c[3], c[4])
    if ok then error(c[1] .. " did not raise") end
    if not tostring(err):find("expected, got", 1, true) then error(c[1] .. ": " .. tostring(err)) end
  end
  return "ok"
end }
`
	rt, node, stop := modtest.Runtime(t, map[string]string{"config.yaml": routerConfig, "replica.lua": routerReplica, "main.lua": main})
	defer stop()
	if e := modtest.RunMain(t, rt, node, 30*time.Second); e.Err != nil || e.Value != "ok" {
		t.Fatalf("main: %v %v", e.Value, e.Err)
	}
}
