-- A service: keeps a count and answers asks about it.
local M = {}

function M.main()
  local count = 0
  local inbox = process.inbox()
  log.info("counter ready")
  while true do
    local msg = inbox:receive()
    local topic = msg:topic()
    if topic == "incr" then
      count = count + (msg:payload() or 1)
    end
    if msg:from() and (topic == "incr" or topic == "get") then
      msg:reply(count)
    end
  end
end

return M
