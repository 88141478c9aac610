-- The Lua side of the cross-node checks, against the node named peer:
-- send, ask (with a deadline that crosses), monitor, link, terminate, all
-- by name@node or by remote PID. Returns "ok" or raises.
-- must returns v, or raises err: the error value itself.
local function must(v, err)
  if err ~= nil then
    error(err, 2)
  end
  return v
end

return {
  main = function(peer)
    local svc = "cl:svc@" .. peer
    must(process.send(svc, "note", "from lua"))
    local last = must(process.ask(svc, "last", nil, "2s"))
    assert(last == "from lua", "last note: " .. tostring(last))

    local who, werr, replier = process.ask(svc, "who", nil, "2s")
    must(who, werr)
    assert(who.pid == replier and who.pid:find("<" .. peer .. ".", 1, true), "who: " .. tostring(who.pid))

    -- An unknown name on the peer, and an ask that outlives its deadline.
    local v, err = process.ask("nobody@" .. peer, "who", nil, "2s")
    assert(v == nil and err.kind == "not_found", "nobody: " .. tostring(err))
    v, err = process.ask(svc, "slow", 500, "100ms")
    assert(v == nil and err.kind == "timeout", "slow: " .. tostring(err))

    -- Monitor by name@node (resolved on the peer), terminate a remote
    -- worker and see its EXIT.
    local events = process.events()
    local worker = must(process.ask(svc, "spawn", nil, "2s"))
    must(process.monitor(worker))
    must(process.terminate(worker))
    local ev = events:receive()
    assert(ev.kind == "EXIT" and ev.from == worker, "event from " .. tostring(ev.from))
    assert(ev.result.error.kind == "stopped", "worker exit: " .. tostring(ev.result.error))

    -- A trapped link to a remote worker: its termination is a LINK_DOWN.
    process.set_options({ trap_links = true })
    worker = must(process.ask(svc, "spawn", nil, "2s"))
    must(process.link(worker))
    must(process.terminate(worker))
    ev = events:receive()
    assert(ev.kind == "LINK_DOWN" and ev.from == worker, "link event " .. tostring(ev.kind))

    must(process.monitor(svc))
    must(process.unmonitor(svc))
    print("check ok against " .. peer)
    return "ok"
  end,
}
