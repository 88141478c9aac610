-- A supervised worker: answers asks, and crashes on "crash" so the
-- supervisor's restarts can be watched (curl /v1/supervisors).
return { main = function(name)
  local inbox = process.inbox()
  local seen = 0
  while true do
    local m = inbox:receive()
    if m:topic() == "crash" then error("asked to crash") end
    seen = seen + 1
    if m:topic() == "get" then m:reply({worker = name or process.pid(), seen = seen}) end
  end
end }
