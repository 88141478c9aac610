-- A service: keeps a count and answers asks about it. Its entry says
-- on_reload: upgrade (config.example.yaml): edit this file while it runs
-- and the count goes on from where it was, under the same PID, with every
-- message not yet read (docs/reload.md#hot-upgrade).
local M = {}

-- Runs on the new code after a reload: it gets what the old code handed
-- to process.upgrade, and returns main's arguments.
function M.upgrade(count)
  log.info("counter upgraded", {count = count})
  return count
end

function M.main(count)
  count = count or 0
  local inbox, events = process.inbox(), process.events()
  log.info("counter ready")
  while true do
    local r = channel.select{ inbox:case_receive(), events:case_receive() }
    if r.channel == events then
      -- Between two messages the state is whole: take the new code.
      if r.value.kind == "UPGRADE" then process.upgrade(count) end
    else
      local msg = r.value
      local topic = msg:topic()
      if topic == "incr" then
        count = count + (msg:payload() or 1)
      end
      if msg:from() and (topic == "incr" or topic == "get") then
        msg:reply(count)
      end
    end
  end
end

return M
