-- A small JSON API behind the http.route entries of config.example.yaml:
--   GET  /api/hello/{name}  -> {"hello": name}
--   GET  /api/count         -> {"count": n}   (asks app:counter)
--   POST /api/count         -> {"count": n+1}
local errors = require("errors")

return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    local req = msg:payload()
    if req.params.name then
      msg:reply({body = {hello = req.params.name}})
    else
      local topic = req.method == "POST" and "incr" or "get"
      local n, err = process.ask("app:counter", topic, 1, "1s")
      if err then
        msg:reply(nil, err)
      elseif type(n) ~= "number" then
        msg:reply(nil, errors.new({kind = "internal", message = "the counter answered no number"}))
      else
        msg:reply({body = {count = n}})
      end
    end
  end
end }
