-- An indexer: joins the pg group "indexers" of app:pg, so the router.group
-- app:search reaches it on whichever node it runs, and answers searches.
local pg = require("pg")

return { main = function(name)
  local scope, err = pg.open("app:pg")
  if not scope then error("no scope: " .. tostring(err)) end
  scope:join("indexers")
  log.info("indexer joined", { name = name })
  local inbox = process.inbox()
  local served = 0
  while true do
    local msg = inbox:receive()
    served = served + 1
    msg:reply({ indexer = name, query = msg:payload(), served = served })
  end
end }
