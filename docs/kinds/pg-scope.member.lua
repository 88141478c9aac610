-- A group member: joins the groups it is given (monitoring the first one
-- too when watch is set), reports to its parent, answers "work"
-- broadcasts, and returns when told to stop.
local pg = require("pg")

local function main(parent, groups, watch)
  local scope = assert(pg.open("app:pg"))
  if watch then assert(scope:monitor(groups[1])) end
  assert(scope:join(groups))
  process.send(parent, "joined")
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    if msg:topic() == "work" then
      process.send(parent, "done", {n = msg:payload().n})
    elseif msg:topic() == "stop" then
      return "stopped"
    end
  end
end

return {main = main}
