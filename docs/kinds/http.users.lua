-- A small user store behind HTTP: GET and PUT /users/{id}.
local json = require("json")
local errors = require("errors")

-- handle returns the response, or nil and the error to answer with.
local function handle(users, req)
  local id = req.params.id
  if req.method == "PUT" then
    local user = json.decode(req.body)
    if type(user) ~= "table" or type(user.name) ~= "string" then
      return nil, errors.new({kind = "invalid", message = "want a JSON object with a name"})
    end
    users[id] = {id = id, name = user.name}
    return {status = 201, body = users[id]}
  elseif users[id] then
    return {body = users[id], headers = {["cache-control"] = "no-store"}}
  end
  return nil, errors.new({kind = "not_found", message = "no user " .. id})
end

return { main = function()
  local users = {}
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    -- reply returns false when the client has stopped waiting, and nil, err
    -- when the response cannot be sent (a cycle, a function): the client
    -- gets a 500 at once, and the log says why
    local _, err = msg:reply(handle(users, msg:payload()))
    if err then log.error("reply failed", {error = err}) end
  end
end }
