package supervisor_test

import (
	"testing"
	"time"

	"github.com/proctor-run/proctor/lua/internal/luatest"
	"github.com/proctor-run/proctor/lua/modules/internal/modtest"
)

func TestMain(m *testing.M) { luatest.Main(m) }

// supWorker is the Lua child used by the supervisor scenarios: it crashes,
// exits or answers on command.
const supWorker = `
return { main = function(name)
  local inbox = process.inbox()
  while true do
    local m = inbox:receive()
    local t = m:topic()
    if t == "crash" then error("boom " .. tostring(name)) end
    if t == "exit" then return "done" end
    if t == "ping" then m:reply({name = name, pid = process.pid(), payload = m:payload()}) end
  end
end }
`

const supConfig = `
namespace: app
entries:
  - {name: worker, kind: process.lua, source: file://worker.lua}
  - {name: main, kind: process.lua, source: file://main.lua}
  - name: s1
    kind: supervisor
    lifecycle: {auto_start: true}
    strategy: one_for_one
    max_restarts: 10
    children:
      - {id: a, process: worker, args: [a]}
      - {id: b, process: worker, args: [b]}
      - {id: c, process: worker, args: [c]}
  - name: s2
    kind: supervisor
    lifecycle: {auto_start: true}
    strategy: all_for_one
    max_restarts: 10
    children:
      - {id: a, process: worker, args: [a]}
      - {id: b, process: worker, args: [b], shutdown: brutal_kill}
      - {id: c, process: worker, args: [c]}
  - name: s3
    kind: supervisor
    lifecycle: {auto_start: true}
    strategy: rest_for_one
    max_restarts: 10
    children:
      - {id: a, process: worker, args: [a]}
      - {id: b, process: worker, args: [b]}
      - {id: c, process: worker, args: [c]}
      - {id: t, process: worker, args: [t], restart: temporary}
  - name: dyn
    kind: supervisor.dynamic
    lifecycle: {auto_start: true}
    max_children: 2
  - name: parts
    kind: supervisor.partition
    lifecycle: {auto_start: true}
    process: worker
    partitions: 3
  - name: fragile
    kind: supervisor
    lifecycle: {auto_start: true, restart: {initial_delay: 10ms}}
    max_restarts: 1
    restart_window: 1m
    children:
      - {id: only, process: worker, args: [only]}
  - name: tree
    kind: supervisor
    lifecycle: {auto_start: true}
    children:
      - {id: x, process: worker, args: [x]}
      - {id: inner, process: fragile}
`

// supMain runs every scenario from Lua and returns "ok", or raises naming
// the one that failed.
const supMain = `
local supervisor = require("supervisor")

local function wait_until(what, f)
  local deadline = time.now() + 5000
  while not f() do
    if time.now() > deadline then error("timed out waiting for " .. what) end
    time.sleep(2)
  end
end

local function pids(sup)
  local out = {}
  for _, c in ipairs(supervisor.which_children(sup)) do out[c.id] = c.pid or false end
  return out
end

-- crash child b of sup; the children in changed must get new pids, the
-- others keep theirs; temporary children in gone must disappear.
local function scenario(sup, changed, gone)
  local before = pids(sup)
  process.send(before.b, "crash")
  wait_until(sup .. " restart", function()
    local now = pids(sup)
    for id in pairs(changed) do
      if not now[id] or now[id] == before[id] then return false end
    end
    for _, c in ipairs(supervisor.which_children(sup)) do
      if c.status ~= "running" then return false end
    end
    return true
  end)
  local now = pids(sup)
  for id, pid in pairs(before) do
    if gone[id] then
      assert(now[id] == nil, sup .. ": temporary child " .. id .. " kept")
    elseif not changed[id] then
      assert(now[id] == pid, sup .. ": child " .. id .. " restarted but should not be")
    end
  end
  for id, pid in pairs(now) do
    local reply, err = process.ask(pid, "ping", nil, 2000)
    assert(reply and reply.name == id, sup .. ": child " .. id .. " does not answer: " .. tostring(err))
  end
end

return { main = function()
  scenario("app:s1", {b = true}, {})
  scenario("app:s2", {a = true, b = true, c = true}, {})
  scenario("s3", {b = true, c = true}, {t = true})

  -- which_children / count_children
  local kids = supervisor.which_children("app:s1")
  assert(#kids == 3 and kids[1].id == "a" and kids[2].restart == "permanent" and kids[3].type == "worker")
  assert(kids[2].restarts == 1, "restarts " .. tostring(kids[2].restarts))
  local n = supervisor.count_children("app:tree")
  assert(n.specs == 2 and n.active == 2 and n.supervisors == 1 and n.workers == 1, "tree counts")

  -- dynamic children
  local pid, err = supervisor.start_child("app:dyn", {id = "d1", process = "worker", args = {"d1"}})
  assert(pid, tostring(err))
  local dup, derr = supervisor.start_child("app:dyn", {id = "d1", process = "worker"})
  assert(dup == nil and derr.kind == "invalid", "duplicate: " .. tostring(derr))
  assert(supervisor.start_child("app:dyn", {id = "d2", process = "app:worker", restart = "transient", shutdown = "50ms"}))
  local over, oerr = supervisor.start_child("app:dyn", {id = "d3", process = "worker"})
  assert(over == nil and oerr.kind == "limit", "max_children: " .. tostring(oerr))
  local none, nerr = supervisor.terminate_child("app:dyn", "nope")
  assert(none == nil and nerr.kind == "not_found", "terminate unknown: " .. tostring(nerr))
  assert(supervisor.terminate_child("app:dyn", "d1"))
  assert(supervisor.count_children("app:dyn").specs == 1)
  assert(supervisor.terminate_child("app:dyn", "d2"))
  local never, nverr = supervisor.start_child("app:dyn", {id = "n", process = "worker", on_reload = "never"})
  assert(never == nil and nverr.kind == "invalid", "on_reload never: " .. tostring(nverr))
  local num = supervisor.start_child("app:dyn", {id = 7, process = "worker", on_reload = "keep"})
  assert(num and supervisor.which_children("app:dyn")[1].id == "7", "numeric id")
  local fixed, ferr = supervisor.start_child("app:s1", {id = "z", process = "worker"})
  assert(fixed == nil and ferr.kind == "invalid", "static start_child: " .. tostring(ferr))
  local missing, merr = supervisor.which_children("app:nothing")
  assert(missing == nil and merr.kind == "not_found")
  local ok = pcall(supervisor.start_child, "app:dyn", {id = "e", process = 42})
  assert(not ok, "a number as process must raise")
  local nf, nferr = supervisor.start_child("app:dyn", {id = "f", process = "worker", args = {print}})
  assert(nf == nil and nferr and nferr.kind == "invalid", "uncopyable args: " .. tostring(nferr))
  ok = pcall(supervisor.start_child, "app:dyn", {id = "g", process = "worker", shutdown = 0/0})
  assert(not ok, "a NaN shutdown must raise")

  -- partition routing: stable, by key field, and sending by key
  local p1 = supervisor.route("app:parts", "alice")
  assert(p1 and supervisor.route("app:parts", "alice") == p1)
  assert(supervisor.route("app:parts", {key = "alice", n = 1}) == p1)
  assert(supervisor.route("app:parts", 7) == supervisor.route("app:parts", 7.0))
  local bad, berr = supervisor.route("app:parts", true)
  assert(bad == nil and berr.kind == "invalid")
  local notp, nperr = supervisor.route("app:s1", "k")
  assert(notp == nil and nperr.kind == "invalid")
  assert(supervisor.send("app:parts", "crash", {key = "alice"}))
  wait_until("alice's worker restarted", function()
    local p = supervisor.route("app:parts", "alice")
    return p and p ~= p1
  end)
  local reply = process.ask(supervisor.route("app:parts", "alice"), "ping", "hi", 2000)
  assert(reply and reply.payload == "hi")

  -- escalation through nested supervisors: fragile (max_restarts 1)
  -- escalates on its second failure; tree restarts it with a new child.
  local inner = supervisor.which_children("app:tree")[2].pid
  local only = supervisor.which_children(inner)[1].pid
  process.send(only, "crash")
  wait_until("fragile's child restarted", function()
    local c = supervisor.which_children(inner)
    return c and c[1].pid and c[1].pid ~= only
  end)
  process.send(supervisor.which_children(inner)[1].pid, "crash")
  wait_until("tree restarted fragile", function()
    local c = supervisor.which_children("app:tree")[2]
    return c.pid and c.pid ~= inner and c.status == "running"
  end)
  local gone, gerr = supervisor.which_children(inner)
  assert(gone == nil and gerr.kind == "not_found", "old inner supervisor still answers")

  -- escalation to the root: the auto_start fragile gives up, and the root
  -- supervisor restarts the entry after its backoff (initial_delay 10ms).
  local first = supervisor.which_children("app:fragile")[1].pid
  process.send(first, "crash")
  local second
  wait_until("fragile restarted its child", function()
    local c = supervisor.which_children("app:fragile")
    second = c and c[1].pid
    return second and second ~= first
  end)
  process.send(second, "crash")
  wait_until("root restarted fragile", function()
    local c = supervisor.which_children("app:fragile")
    return c and c[1].pid and c[1].pid ~= second and c[1].restarts == 0
  end)
  return "ok"
end }
`

func TestLuaSupervisorScenarios(t *testing.T) {
	rt, node, stop := modtest.Runtime(t, map[string]string{"config.yaml": supConfig, "worker.lua": supWorker, "main.lua": supMain})
	defer stop()
	if e := modtest.RunMain(t, rt, node, 30*time.Second); e.Err != nil || e.Value != "ok" {
		t.Fatalf("main: %v %v", e.Value, e.Err)
	}
}

// TestLuaSupervisorScenariosThroughRunner runs the same scenarios as users
// do: `runner run --main app:main` on the config, exit 0 when every
// scenario held.
func TestLuaSupervisorScenariosThroughRunner(t *testing.T) {
	dir := luatest.WriteFiles(t, map[string]string{"config.yaml": supConfig, "worker.lua": supWorker, "main.lua": supMain})
	r := luatest.RunRunner(t, dir, "run", "--no-watch", "--log-level", "error", "--main", "app:main", "config.yaml")
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// start_child returns once the child's init has returned, with the child
// registered under its spec's name: a lookup right after it finds the
// child (the chat-room app of issue 13 missed 73 of 100). A failing init
// fails the start; a name in use does too.
func TestLuaStartChildWaitsForInit(t *testing.T) {
	rt, node, stop := modtest.Runtime(t, map[string]string{
		"config.yaml": `
namespace: app
entries:
  - {name: room, kind: process.lua, source: file://room.lua}
  - {name: main, kind: process.lua, source: file://main.lua}
  - {name: rooms, kind: supervisor.dynamic, lifecycle: {auto_start: true}}
  - name: fixed
    kind: supervisor
    lifecycle: {auto_start: true}
    children:
      - {id: hall, process: room, name: room.hall, args: [hall]}
`,
		"room.lua": `
local errors = require("errors")
return {
  init = function(topic)
    if topic == "bad" then return error(errors.new("invalid", "no such topic")) end
    time.sleep(5)
    return {topic = topic, members = 0}
  end,
  main = function(state)
    local inbox = process.inbox()
    while true do
      local msg = inbox:receive()
      state.members = state.members + 1
      msg:reply({topic = state.topic, members = state.members, me = process.pid()})
    end
  end,
}`,
		"main.lua": `
local supervisor = require("supervisor")
return { main = function()
  local hall = assert(process.lookup("room.hall"))
  local reply, err, from = process.ask("room.hall", "join")
  assert(err == nil and reply.topic == "hall" and from == hall, tostring(err))
  for i = 1, 100 do
    local pid = assert(supervisor.start_child("app:rooms", {id = "r" .. i, process = "room", name = "room." .. i, args = {"t" .. i}}))
    assert(process.lookup("room." .. i) == pid, "room." .. i .. " not registered when start_child returned")
  end
  local r = process.ask("room.42", "join")
  assert(r.topic == "t42" and r.members == 1)
  local dup, derr = supervisor.start_child("app:rooms", {id = "again", process = "room", name = "room.42", args = {"x"}})
  assert(dup == nil and derr.kind == "invalid" and derr.message:find("room.42", 1, true), tostring(derr))
  local bad, berr = supervisor.start_child("app:rooms", {id = "bad", process = "room", name = "room.bad", args = {"bad"}})
  assert(bad == nil and berr.kind == "invalid" and berr.message:find("no such topic", 1, true), tostring(berr))
  assert(process.lookup("room.bad") == nil)
  assert(supervisor.count_children("app:rooms").specs == 100)
  return "ok"
end }`,
	})
	defer stop()
	if e := modtest.RunMain(t, rt, node, 60*time.Second); e.Err != nil || e.Value != "ok" {
		t.Fatalf("main: %v %v", e.Value, e.Err)
	}
}
