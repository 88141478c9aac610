-- An indexer: joins the pg group "indexers" of app:pg, so the router.group
-- app:search reaches it on whichever node it runs, and answers searches
-- (saying which node answered).
local pg = require("pg")

-- The node this process runs on: a PID reads <node.id.creation>.
local node = process.pid():match("^<(.+)%.%d+%.%d+>$")

return {
  -- init runs before whoever started the indexer goes on: once the
  -- supervisor has it, it is already a member of the group.
  init = function(name)
    local scope = assert(pg.open("app:pg"))
    assert(scope:join("indexers"))
    log.info("indexer joined", { name = name })
    return name
  end,

  main = function(name)
    local inbox = process.inbox()
    local served = 0
    while true do
      local msg = inbox:receive()
      served = served + 1
      msg:reply({ indexer = name, node = node, query = msg:payload(), served = served })
    end
  end,
}
