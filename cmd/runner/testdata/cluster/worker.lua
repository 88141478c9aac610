-- Waits until stopped.
return {
  main = function()
    local inbox = process.inbox()
    while true do
      inbox:receive()
    end
  end,
}
