-- A member of group g of pgc:pg: it answers an ask with its node's name.
local pg = require("pg")

return { main = function()
  local scope = assert(pg.open("pgc:pg"))
  assert(scope:join("g"))
  local node = process.pid():match("^<(.+)%.%d+%.%d+>$")
  local inbox = process.inbox()
  while true do
    inbox:receive():reply(node)
  end
end }
