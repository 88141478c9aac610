-- A definition, run with: go run ./cmd/runner run --main app:hello -- a b c
-- It returns normally (exit 0), or raises when its first argument is "fail"
-- (exit 1, with the error printed).
local errors = require("errors")

return {
  main = function(...)
    local args = { ... }
    print("hello from " .. process.pid() .. ", args: " .. table.concat(args, " "))
    local n, err = process.ask("app:counter", "get", nil, 1000)
    if err then
      error(errors.wrap(err, "counter unavailable"))
    end
    print("the counter is at " .. tostring(n))
    if args[1] == "fail" then
      error("asked to fail")
    end
    return n
  end,
}
