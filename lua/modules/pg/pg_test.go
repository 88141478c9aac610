package pg_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/lua/internal/luatest"
	"github.com/proctor-run/proctor/lua/modules/pg"
	"github.com/proctor-run/proctor/process"
)

func TestMain(m *testing.M) { luatest.Main(m) }

var eventually = testutil.EventuallyWithin

// pgHarness is the Lua harness with a scope test:pg running.
func pgHarness(t testing.TB, mod func(*pgscope.Spec)) (*luatest.Harness, *pgscope.Scope) {
	t.Helper()
	h := luatest.New(t, func(stdout io.Writer) luatest.Kind {
		return lua.NewKind(lua.Options{Stdout: stdout, Modules: []lua.Module{pg.Module()}})
	})
	reg := prometheus.NewRegistry()
	h.Env.Metrics = reg
	spec := pgscope.DefaultSpec()
	if mod != nil {
		mod(&spec)
	}
	s, err := pgscope.New(h.Env, "test:pg", spec)
	if err != nil {
		t.Fatal(err)
	}
	// The docs name it app:pg; tests use the harness namespace.
	h.Look.SetInstance("test:pg", s)
	h.Look.SetInstance("app:pg", s)
	// Registered after the harness's own cleanup, so it runs first and the
	// scope's process is gone before the harness counts processes.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	return h, s
}

// pg_SUITE:pg and single, from Lua.
func TestLuaPGBasicAndMultiplicity(t *testing.T) {
	h, _ := pgHarness(t, nil)
	e := h.Entry("main", `
local pg = require("pg")
return { main = function()
  local scope = assert(pg.open("pg"))           -- the caller's namespace
  local self = process.pid()
  assert(scope:join("pg") == true)
  local m = scope:get_local_members("pg")
  assert(#m == 1 and m[1] == self, "local members")
  assert(scope:which_groups()[1] == "pg", "which_groups")
  assert(scope:which_local_groups()[1] == "pg", "which_local_groups")
  assert(scope:leave("pg"))
  assert(#scope:get_members("pg") == 0, "members after leave")
  assert(#scope:which_groups() == 0, "groups after leave")

  -- multiplicity
  assert(scope:join("single"))
  assert(scope:join({"single", "single"}))
  local all = scope:get_members("single")
  assert(#all == 3 and all[1] == self and all[3] == self, "three copies")
  local ok, err = scope:leave("$missing$")
  assert(ok == nil and err.kind == "not_joined", "not_joined: " .. tostring(err))
  assert(scope:leave({"single", "single"}))
  assert(#scope:get_members("single") == 1, "one copy left")
  assert(scope:leave("single"))
  assert(#scope:which_groups() == 0, "empty groups vanish")
  return "ok"
end }`)
	h.Check(e)
}

// Errors come back as nil, err; wrong argument types raise.
func TestLuaPGErrors(t *testing.T) {
	h, _ := pgHarness(t, func(s *pgscope.Spec) { s.MaxGroups = 1 })
	e := h.Entry("main", `
local pg = require("pg")
return { main = function()
  local s, err = pg.open("test:missing")
  assert(s == nil and err.kind == "not_found", "open missing: " .. tostring(err))
  local scope = assert(pg.open("test:pg"))
  assert(not pcall(scope.join, scope, 42), "a number group must raise")
  assert(not pcall(scope.join, scope, {"a", 1}), "a number in the list must raise")
  local ok, err = scope:join("")
  assert(ok == nil and err.kind == "invalid", "empty group")
  assert(scope:join("a"))
  ok, err = scope:join("b")
  assert(ok == nil and err.kind == "limit", "max_groups: " .. tostring(err))
  local n, err = scope:broadcast("a", "t", {f = function() end})
  assert(n == nil and err.kind == "invalid", "function payload")
  assert(tostring(scope) == "pg.scope test:pg")
  return "ok"
end }`)
	h.Check(e)
}

// A member that exits is removed once per join, one event per copy; the
// subscription's snapshot and events are consistent.
func TestLuaPGExitCleanupAndEvents(t *testing.T) {
	h, _ := pgHarness(t, nil)
	h.Entry("member", `
local pg = require("pg")
return { main = function(parent)
  local scope = assert(pg.open("test:pg"))
  assert(scope:join({"g", "g", "h"}))
  process.send(parent, "joined")
  process.inbox():receive()   -- wait to be told to go
  return "bye"
end }`)
	e := h.Entry("main", `
local pg = require("pg")
local function expect(ch, kind, group, pids)
  local ev = ch:receive()
  assert(ev.kind == kind, "kind " .. tostring(ev.kind) .. " want " .. kind)
  assert(ev.group == group, "group " .. tostring(ev.group) .. " want " .. group)
  assert(#ev.pids == #pids, "pids " .. #ev.pids .. " want " .. #pids)
  for i, p in ipairs(pids) do assert(ev.pids[i] == p, "pid " .. i) end
end
return { main = function()
  local scope = assert(pg.open("test:pg"))
  local sub, snap = scope:events()
  assert(next(snap) == nil, "empty snapshot")
  local ch = sub:channel()
  local m = assert(process.spawn("member", process.pid()))
  assert(process.inbox():receive():topic() == "joined")
  expect(ch, "member.joined", "g", {m, m})
  expect(ch, "member.joined", "h", {m})
  local mon, members = scope:monitor("g")
  assert(#members == 2, "monitor snapshot")
  process.send(m, "go")
  expect(ch, "member.left", "g", {m})
  expect(ch, "member.left", "g", {m})
  expect(ch, "member.left", "h", {m})
  expect(mon:channel(), "member.left", "g", {m})
  expect(mon:channel(), "member.left", "g", {m})
  assert(#scope:which_groups() == 0, "groups after exit")
  assert(sub:close())
  local v, ok = ch:receive()
  assert(v == nil and ok == false, "closed channel")
  return "ok"
end }`)
	h.Check(e)
}

// pg_SUITE:monitor_self and multi_monitor: a process that monitors and
// joins, then exits; its subscriptions end with it.
func TestLuaPGMonitorSelfAndOwnerExit(t *testing.T) {
	h, s := pgHarness(t, nil)
	e := h.Entry("main", `
local pg = require("pg")
return { main = function()
  local scope = assert(pg.open("test:pg"))
  local self = process.pid()
  local one, m1 = scope:monitor("one")
  local two = scope:monitor("two")
  local all = scope:events()
  assert(#m1 == 0)
  assert(scope:join("one"))
  assert(scope:join("two"))
  for _, w in ipairs({{one, "one"}, {all, "one"}, {two, "two"}, {all, "two"}}) do
    local ev = w[1]:channel():receive()
    assert(ev.kind == "member.joined" and ev.group == w[2] and ev.pids[1] == self, "event for " .. w[2])
  end
  return "ok"
end }`)
	h.Check(e)
	eventually(t, 5*time.Second, "groups and subscriptions of the exited process to go", func() bool {
		return len(s.WhichGroups()) == 0 && subscribers(t, h) == 0
	})
}

func subscribers(t *testing.T, h *luatest.Harness) float64 {
	t.Helper()
	mfs, err := h.Env.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "pg_subscribers" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("pg_subscribers not registered")
	return 0
}

// broadcast reaches each distinct member once; broadcast_local the same on
// one node.
func TestLuaPGBroadcast(t *testing.T) {
	h, _ := pgHarness(t, nil)
	h.Entry("worker", `
local pg = require("pg")
return { main = function(parent)
  local scope = assert(pg.open("test:pg"))
  assert(scope:join({"workers", "workers"}))
  process.send(parent, "ready")
  local inbox = process.inbox()
  local got = 0
  while true do
    local msg = inbox:receive()
    if msg:topic() == "work" then
      got = got + 1
      process.send(parent, "got", {n = msg:payload().n, from = msg:from()})
    elseif msg:topic() == "stop" then
      return got
    end
  end
end }`)
	e := h.Entry("main", `
local pg = require("pg")
return { main = function()
  local scope = assert(pg.open("test:pg"))
  local w1 = assert(process.spawn("worker", process.pid()))
  local w2 = assert(process.spawn("worker", process.pid()))
  local inbox = process.inbox()
  assert(inbox:receive():topic() == "ready")
  assert(inbox:receive():topic() == "ready")
  assert(#scope:get_members("workers") == 4, "two copies each")
  local n = assert(scope:broadcast("workers", "work", {n = 1}))
  assert(n == 2, "reached " .. n)
  n = assert(scope:broadcast_local("workers", "work", {n = 2}))
  assert(n == 2, "local reached " .. n)
  local seen = {}
  for i = 1, 4 do
    local msg = inbox:receive()
    assert(msg:topic() == "got")
    local p = msg:payload()
    assert(p.from == process.pid(), "sender is the broadcaster")
    seen[msg:from() .. p.n] = (seen[msg:from() .. p.n] or 0) + 1
  end
  for _, w in ipairs({w1, w2}) do
    for n = 1, 2 do assert(seen[w .. n] == 1, "one copy each") end
  end
  assert(scope:broadcast("nobody", "x") == 0)
  process.send(w1, "stop")
  process.send(w2, "stop")
  return "ok"
end }`)
	h.Check(e)
}

// monitor_buffer bounds a script's subscription: the overflow is dropped
// and counted for that subscriber; close with flush discards the rest.
func TestLuaPGBufferDropAndFlush(t *testing.T) {
	h, _ := pgHarness(t, func(s *pgscope.Spec) { s.MonitorBuffer = 2 })
	e := h.Entry("main", `
local pg = require("pg")
return { main = function()
  local scope = assert(pg.open("test:pg"))
  local slow = scope:monitor("g")
  local keep = scope:monitor("g")
  for i = 1, 5 do assert(scope:join("g")) end
  assert(slow:dropped() == 3, "dropped " .. slow:dropped())
  assert(slow:close({flush = true}))
  local v, ok = slow:channel():receive()
  assert(v == nil and ok == false, "flushed close")
  assert(keep:close())
  local ev = keep:channel():receive()
  assert(ev and ev.kind == "member.joined", "plain close keeps what is queued")
  assert(keep:channel():receive())
  v, ok = keep:channel():receive()
  assert(v == nil and ok == false, "then closed")
  return "ok"
end }`)
	h.Check(e)
}

// The ```lua blocks of docs/lua/pg.md run as scripts with app:pg running
// and a "joiner" helper (joins the group it is given, then returns); each
// returns "ok".
func TestLuaPGDocExamples(t *testing.T) {
	for i, src := range luatest.DocExamples(t, "pg.md") {
		t.Run(string(rune('1'+i)), func(t *testing.T) {
			h, _ := pgHarness(t, nil)
			h.Entry("joiner", `
return { main = function(group)
  local scope = assert(require("pg").open("app:pg"))
  assert(scope:join(group))
  return "done"
end }`)
			h.Check(h.Entry("example", src))
		})
	}
}

// A script's scope handle follows a restart of the entry: calls after it
// reach the new scope instead of failing with stopped.
func TestLuaPGHandleFollowsRestart(t *testing.T) {
	h, old := pgHarness(t, nil)
	e := h.Entry("main", `
local pg = require("pg")
return { main = function()
  local scope = assert(pg.open("test:pg"))
  assert(scope:join("a"))
  process.inbox():receive()   -- the test restarts the scope meanwhile
  assert(#scope:get_members("a") == 0, "the new scope starts empty")
  assert(scope:join("b"))
  process.inbox():receive()   -- the test checks the new scope meanwhile
  return "ok"
end }`)
	pid := h.Spawn(e)
	eventually(t, 5*time.Second, "the join", func() bool { return len(old.GetMembers("a")) == 1 })
	if err := old.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	fresh, err := pgscope.New(h.Env, "test:pg", pgscope.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fresh.Stop(context.Background()) })
	h.Look.SetInstance("test:pg", fresh)
	if err := h.Node.Send(pid, process.Message{Topic: "go"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the join on the new scope", func() bool { return len(fresh.GetMembers("b")) == 1 })
	if err := h.Node.Send(pid, process.Message{Topic: "stop"}); err != nil {
		t.Fatal(err)
	}
	if ex := h.Wait(pid, 10*time.Second); ex.Err != nil || ex.Value != "ok" {
		t.Fatalf("exit = %+v", ex)
	}
}

// A misspelt method of a scope or a subscription names the object, the
// method and the nearest one; so does a misspelt function of the module.
func TestLuaPGMisspeltNames(t *testing.T) {
	h, _ := pgHarness(t, nil)
	h.Check(h.Entry("main", `
local pg = require("pg")
local function fails(f, want)
  local ok, err = pcall(f)
  assert(not ok and err:find(want, 1, true), tostring(err))
end
return { main = function()
  local scope = assert(pg.open("pg"))
  fails(function() scope:broadcst("g", "t") end, 'pg scope has no method "broadcst" (did you mean "broadcast"?)')
  local sub = scope:monitor("g")
  fails(function() sub:chanel() end, 'pg subscription has no method "chanel" (did you mean "channel"?)')
  fails(function() pg.opne("pg") end, 'pg has no function "opne" (did you mean "open"?)')
  sub:close()
  return "ok"
end }`))
}
