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
local errors = require("errors")

local function round(n)
  local report = {}

  local hit, err, winner = router.ask("app:replicas", { key = "user-42" })
  if err then return nil, errors.wrap(err, "replicas") end
  report.replicas = hit.value
  report.winner = winner

  local found, serr = router.ask("app:search", "proctor")
  if serr then return nil, errors.wrap(serr, "search") end
  report.search = found.indexer

  local worker = supervisor.route("app:shards", "customer-7")
  local got, gerr = process.ask(worker, "get", "customer-7")
  if gerr then return nil, errors.wrap(gerr, "shards") end
  report.shard = got.key

  -- a named, short-lived child: registered before start_child returns
  local child = "job-" .. n
  local pid, cerr = supervisor.start_child("app:sessions",
    { id = child, process = "app:shard", restart = "temporary", args = { child }, name = "demo." .. child })
  if cerr then return nil, errors.wrap(cerr, "sessions") end
  assert(process.lookup("demo." .. child) == pid)
  local counts = supervisor.count_children("app:sessions")
  supervisor.terminate_child("app:sessions", child)
  report.sessions = counts.active

  local scope = assert(pg.open("app:pg"))
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
    local report = assert(round(n)) -- a failed round ends the client with its error
    if rounds ~= nil and n >= rounds then
      print(json.encode(report))
      return report
    end
    time.sleep("3s")
  end
end }
