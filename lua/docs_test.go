package lua

import (
	"strings"
	"testing"

	"github.com/proctor-run/proctor/lua/internal/luatest"
)

// TestDocExamples runs every ```lua block of the pages this package owns
// as the script of an entry named "example", next to two helpers: "echo"
// (replies to asks with the payload, answers tells with topic "echo") and
// "crasher" (raises at once). Each example must return "ok".
func TestDocExamples(t *testing.T) {
	for _, page := range []string{"process.md", "channel.md", "time.md", "log.md", "json.md"} {
		for i, src := range luatest.DocExamples(t, page) {
			t.Run(strings.TrimSuffix(page, ".md")+"/"+string(rune('1'+i)), func(t *testing.T) {
				h := newHarness(t)
				h.Entry("echo", `
return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    if msg:topic() == "stop" then return "stopped" end
    local replied = msg:reply(msg:payload())
    if replied == nil and msg:from() then process.send(msg:from(), "echo", msg:payload()) end
  end
end }`)
				h.Entry("crasher", `return { main = function() error("crashed") end }`)
				h.Check(h.Entry("example", src))
			})
		}
	}
}
