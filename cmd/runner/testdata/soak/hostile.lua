-- The soak's hostile script: what an attacker's script does to a node,
-- each of which once took it down or cost it without bound (issue 22).
-- It asserts what the runtime answers; an assertion that fails restarts
-- it, which the soak counts as a failure.
local supervisor = require("supervisor")
local pg = require("pg")

return { main = function()
  local scope = assert(pg.open("pg"))
  -- Unread subscriptions, up to the bound: every change of "hot" is
  -- offered to each, and none is ever read.
  local subs = {}
  for i = 1, 1000 do subs[i] = assert(scope:monitor("hot")) end
  local extra, err = scope:monitor("hot")
  assert(extra == nil and err.kind == "limit", tostring(err))
  local dead = process.pid():gsub("^(<[^.]+)%.%d+%.", "%1.999999.")
  local huge = string.rep("T", 4 * 1024 * 1024)
  local n = 0
  while true do
    n = n + 1
    -- Huge topics and names: refused at the send, never a dead letter.
    local ok, e = process.send(dead, huge)
    assert(ok == nil and e.kind == "limit", tostring(e))
    ok, e = process.send("nobody." .. n, huge, huge)
    assert(ok == nil and e.kind == "limit", tostring(e))
    ok, e = process.send(huge, "t")
    assert(ok == nil and e.kind == "limit", tostring(e))
    -- A huge child id: a label too (views, log lines, a metric's label).
    ok, e = supervisor.start_child("app:sessions", {id = huge, process = "bigerr", restart = "temporary"})
    assert(ok == nil and e.kind == "limit", tostring(e))
    assert(process.send(dead, "an ordinary dead letter") == nil)
    assert(scope:join("hot"))
    assert(scope:leave("hot"))
    -- A huge error, raised by a child every half second.
    if n % 5 == 0 then
      supervisor.start_child("app:sessions", {id = "bigerr-" .. n, process = "bigerr", restart = "temporary"})
    end
    time.sleep(100)
  end
end }
