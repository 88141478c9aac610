-- Uses every kind of the demo once per round: a hedged read through the
-- scatter/gather pool, a search through the pg-backed router.group, a keyed
-- call to a partition worker, and a short-lived child of the dynamic
-- supervisor. --main app:client -- 1 runs one round and returns its report.
-- Run as a cluster (README), the pg group spans the nodes: the round asks
-- every indexer once, whichever node it runs on, and reports which nodes
-- answered.
local router = require("router")
local supervisor = require("supervisor")
local pg = require("pg")
local json = require("json")

local function round(n)
  local report = {}

  local hit, winner = router.ask("app:replicas", { key = "user-42" })
  if not hit then error("replicas: " .. tostring(hit == nil and winner)) end
  report.replicas = hit.value

  local found, by = router.ask("app:search", "proctor")
  if not found then error("search: " .. tostring(by)) end
  report.search = found.indexer

  local worker = supervisor.route("app:shards", "customer-7")
  local got, err = process.ask(worker, "get", "customer-7")
  if not got then error("shards: " .. tostring(err)) end
  report.shard = got.key

  local child = "job-" .. n
  local pid, serr = supervisor.start_child("app:sessions",
    { id = child, process = "app:shard", restart = "temporary", args = { child } })
  if not pid then error("sessions: " .. tostring(serr)) end
  local counts = supervisor.count_children("app:sessions")
  supervisor.terminate_child("app:sessions", child)
  report.sessions = counts.active

  local scope = pg.open("app:pg")
  report.indexers = #scope:get_members("indexers")

  -- Round robin over the group: each indexer once, on any node.
  local answered = {}
  for _ = 1, router.size("app:search") do
    local r = router.ask("app:search", "proctor")
    if r then answered[r.node] = (answered[r.node] or 0) + 1 end
  end
  report.answered_by = answered

  log.info("round", report)
  return report
end

return { main = function(rounds)
  rounds = tonumber(rounds)
  local n = 0
  while rounds == nil or n < rounds do
    n = n + 1
    local report = round(n)
    if rounds ~= nil and n >= rounds then
      print(json.encode(report))
      return report
    end
    time.sleep("3s")
  end
end }
