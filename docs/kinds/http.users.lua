-- A small user store behind HTTP: GET and PUT /users/{id}.
local json = require("json")
local errors = require("errors")

return { main = function()
  local users = {}
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    local req = msg:payload()
    local id = req.params.id
    if req.method == "PUT" then
      local user, err = json.decode(req.body)
      if type(user) ~= "table" or type(user.name) ~= "string" then
        msg:reply(nil, errors.new({kind = "invalid", message = "want a JSON object with a name"}))
      else
        users[id] = {id = id, name = user.name}
        msg:reply({status = 201, body = users[id]})
      end
    elseif users[id] then
      msg:reply({body = users[id], headers = {["cache-control"] = "no-store"}})
    else
      msg:reply(nil, errors.new({kind = "not_found", message = "no user " .. id}))
    end
  end
end }
