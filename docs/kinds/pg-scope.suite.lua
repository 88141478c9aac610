-- OTP's pg_SUITE single-node cases, from Lua. Every check raises on
-- failure, so `runner run --main app:pg_suite` exits 1 with the reason.
local pg = require("pg")

local function expect(ch, kind, group, pids)
  local ev = assert(ch:receive(), "subscription closed")
  assert(ev.kind == kind, ("kind %s, want %s"):format(ev.kind, kind))
  assert(ev.group == group, ("group %s, want %s"):format(ev.group, group))
  assert(#ev.pids == #pids, ("%d pids, want %d"):format(#ev.pids, #pids))
  for i, p in ipairs(pids) do assert(ev.pids[i] == p, "pid " .. i) end
end

local function spawn_member(groups, watch)
  local m = assert(process.spawn("app:pg_member", process.pid(), groups, watch))
  local msg = process.inbox():receive()
  assert(msg:topic() == "joined", "member did not join")
  return m
end

local cases = {}

-- pg: the basic API
function cases.basic(scope)
  local self = process.pid()
  assert(scope:join("pg"))
  assert(scope:get_local_members("pg")[1] == self)
  assert(scope:which_groups()[1] == "pg")
  assert(scope:which_local_groups()[1] == "pg")
  assert(scope:leave("pg"))
  assert(#scope:get_members("pg") == 0)
  assert(#scope:which_groups() == 0)
end

-- single: multiplicity and not_joined
function cases.single(scope)
  assert(scope:join("single"))
  assert(scope:join({"single", "single"}))
  assert(#scope:get_members("single") == 3)
  local ok, err = scope:leave("$missing$")
  assert(ok == nil and err.kind == "not_joined", tostring(err))
  assert(scope:leave({"single", "single"}))
  assert(scope:leave("single"))
  assert(#scope:which_groups() == 0, "empty groups vanish")
end

-- exit cleanup: once per join, one event per copy
function cases.exit_cleanup(scope)
  local sub = scope:events()
  local ch = sub:channel()
  local m = spawn_member({"g", "g", "h"})
  expect(ch, "member.joined", "g", {m, m})
  expect(ch, "member.joined", "h", {m})
  process.send(m, "stop")
  expect(ch, "member.left", "g", {m})
  expect(ch, "member.left", "g", {m})
  expect(ch, "member.left", "h", {m})
  assert(#scope:which_groups() == 0)
  sub:close()
end

-- leave/exit race, 100 times: whichever comes first, nothing is left
function cases.leave_exit_race(scope)
  for _ = 1, 100 do
    local m = spawn_member({"race"})
    process.send(m, "stop")
    scope:leave("race") -- not ours: not_joined, and harmless
  end
  local deadline = time.now() + 5000
  while #scope:get_members("race") > 0 do
    assert(time.now() < deadline, "race members left behind")
    time.sleep(1)
  end
end

-- monitor: snapshot and subscription in one step; a second monitor
-- sees the same sequence after its own snapshot
function cases.monitor(scope)
  local self = process.pid()
  local sub, members = scope:monitor("mon")
  assert(#members == 0)
  assert(scope:join("mon"))
  expect(sub:channel(), "member.joined", "mon", {self})
  local sub2, members2 = scope:monitor("mon")
  assert(#members2 == 1 and members2[1] == self)
  assert(scope:join({"mon", "mon"}))
  expect(sub:channel(), "member.joined", "mon", {self, self})
  expect(sub2:channel(), "member.joined", "mon", {self, self})
  assert(scope:leave({"mon", "mon", "mon"}))
  expect(sub:channel(), "member.left", "mon", {self, self, self})
  sub2:close({flush = true})
  local v, ok = sub2:channel():receive()
  assert(v == nil and ok == false, "flushed subscription still delivered")
  sub:close()
end

-- monitor_self: a process that both monitors and joins, then exits; its
-- membership and its subscription go with it, and the scope carries on
function cases.monitor_self(scope)
  local sub = scope:events()
  local m = spawn_member({"self"}, true)
  expect(sub:channel(), "member.joined", "self", {m})
  process.send(m, "stop")
  expect(sub:channel(), "member.left", "self", {m})
  assert(#scope:which_groups() == 0)
  assert(scope:join("after") and scope:leave("after"), "scope still serves")
  sub:close()
end

-- broadcast: one copy per distinct member
function cases.broadcast(scope)
  local a = spawn_member({"workers", "workers"})
  local b = spawn_member({"workers"})
  assert(scope:broadcast("workers", "work", {n = 1}) == 2)
  assert(scope:broadcast_local("workers", "work", {n = 2}) == 2)
  for _ = 1, 4 do assert(process.inbox():receive():topic() == "done") end
  process.send(a, "stop")
  process.send(b, "stop")
end

-- limits: max_groups, max_members_per_group, monitor_buffer
function cases.limits()
  local small = assert(pg.open("app:pg_small"))
  assert(small:join({"a", "b"}))
  local ok, err = small:join("c")
  assert(ok == nil and err.kind == "limit", "max_groups: " .. tostring(err))
  ok, err = small:join({"a", "a", "a"})
  assert(ok == nil and err.kind == "limit", "max_members_per_group: " .. tostring(err))
  local sub = small:monitor("a")
  for _ = 1, 2 do assert(small:join("a")) end
  assert(small:leave({"a", "a", "a"}))
  for _ = 1, 3 do assert(small:join("a")) ; assert(small:leave("a")) end
  assert(sub:dropped() > 0, "a full monitor_buffer drops")
  sub:close()
  assert(small:leave("b"))
end

local order = {"basic", "single", "exit_cleanup", "leave_exit_race", "monitor", "monitor_self", "broadcast", "limits"}

local function main()
  local scope = assert(pg.open("app:pg"))
  for _, name in ipairs(order) do
    cases[name](scope)
    print("pg_suite: " .. name .. " ok")
  end
  return "ok"
end

return {main = main}
