-- A member of group g of a scope (pgc:pg unless its args name another):
-- it answers asks with its node and PID, and joins or leaves another group
-- when asked to ("join"/"leave" with the group's name).
local pg = require("pg")

return { main = function(scope_id)
  local scope = assert(pg.open(scope_id or "pgc:pg"))
  assert(scope:join("g"))
  local node = process.pid():match("^<(.+)%.%d+%.%d+>$")
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    local topic, p = msg:topic(), msg:payload()
    if topic == "join" then
      msg:reply(scope:join(p))
    elseif topic == "leave" then
      msg:reply(scope:leave(p))
    else
      msg:reply({ node = node, pid = process.pid() })
    end
  end
end }
