local supervisor = require("supervisor")
return { main = function()
  local before = supervisor.which_children("app:core")[1]
  process.send(before.pid, "crash")
  repeat
    time.sleep(5)
    local now = supervisor.which_children("app:core")[1]
  until now.status == "running" and now.pid ~= before.pid
  print("core restarted " .. before.id)
  local pid = supervisor.route("app:shards", "customer-7")
  local reply, err = process.ask(pid, "get", {key = "customer-7"})
  if err then return nil, err end
  print("customer-7 lives on " .. pid .. ", seen " .. reply.seen)
  assert(supervisor.start_child("app:sessions", {id = "s1", process = "shard", args = {"s1"}}))
  local n = supervisor.count_children("app:sessions")
  print("sessions: " .. n.active .. " active of " .. n.specs)
end }
