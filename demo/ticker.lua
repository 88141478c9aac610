-- A service that depends on app:counter: bumps it every interval.
return {
  main = function(interval)
    while true do
      time.sleep(interval or "2s")
      -- ask returns the reply, nil and who replied; or nil and an error.
      local n, err = process.ask("app:counter", "incr", 1, 1000)
      if err then
        log.warn("counter did not answer", { error = tostring(err), kind = err.kind })
      else
        log.info("tick", { count = n })
      end
    end
  end,
}
