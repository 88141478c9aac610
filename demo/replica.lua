-- A replica: answers {key = ...} lookups after a variable delay. Misses
-- reject the ask, so a scatter moves on to the next replica at once.
local data = { ["user-42"] = "Ada", ["user-7"] = "Grace" }

return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    local p = msg:payload()
    local key = type(p) == "table" and p.key or p
    time.sleep(math.random(1, 20)) -- a replica is sometimes slow
    local v = data[key]
    if v ~= nil then
      msg:reply({ key = key, value = v })
    else
      msg:reply(nil, { kind = "not_found", message = "no " .. tostring(key) })
    end
  end
end }
