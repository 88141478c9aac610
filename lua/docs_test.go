package lua

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var luaBlock = regexp.MustCompile("(?s)```lua\n(.*?)```")

// docExamples returns the ```lua blocks of a page under docs/lua.
func docExamples(t *testing.T, page string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "lua", page))
	if err != nil {
		t.Fatalf("read %s: %v", page, err)
	}
	var out []string
	for _, m := range luaBlock.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Fatalf("%s has no lua examples", page)
	}
	return out
}

// TestDocExamples runs every ```lua block of the pages this package owns
// as the script of an entry named "example", next to two helpers: "echo"
// (replies to asks with the payload, answers tells with topic "echo") and
// "crasher" (raises at once). Each example must return "ok".
func TestDocExamples(t *testing.T) {
	for _, page := range []string{"process.md", "channel.md", "time.md", "log.md", "json.md"} {
		for i, src := range docExamples(t, page) {
			t.Run(strings.TrimSuffix(page, ".md")+"/"+string(rune('1'+i)), func(t *testing.T) {
				h := newHarness(t)
				h.entry("echo", `
return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    if msg:topic() == "stop" then return "stopped" end
    local replied = msg:reply(msg:payload())
    if replied == nil and msg:from() then process.send(msg:from(), "echo", msg:payload()) end
  end
end }`)
				h.entry("crasher", `return { main = function() error("crashed") end }`)
				check(t, h, h.entry("example", src))
			})
		}
	}
}
