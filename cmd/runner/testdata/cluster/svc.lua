-- Answers asks from any node: who (its pid), note/last (a tell, then what
-- it said), spawn (a worker, for remote terminate and link), slow (reply
-- after a delay), relay (ask another node by name@node, from Lua).
return {
  main = function()
    local last
    local inbox = process.inbox()
    while true do
      local msg = inbox:receive()
      local topic, p = msg:topic(), msg:payload()
      if topic == "who" then
        msg:reply({ pid = process.pid() })
      elseif topic == "note" then
        last = p
      elseif topic == "last" then
        msg:reply(last)
      elseif topic == "spawn" then
        local pid, err = process.spawn("cl:worker")
        if pid == nil then
          msg:reply(nil, err)
        else
          msg:reply(pid)
        end
      elseif topic == "slow" then
        time.sleep(p)
        msg:reply("late")
      elseif topic == "relay" then
        local v, err = process.ask(p.dest, p.topic, p.payload, "2s")
        if err then
          msg:reply(nil, err)
        else
          msg:reply(v)
        end
      end
    end
  end,
}
