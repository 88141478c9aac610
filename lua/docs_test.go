package lua

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/lua/internal/luatest"
)

// TestDocExamples runs every ```lua block of the pages this package owns
// as the script of an entry named "example", next to two helpers: "echo"
// (replies to asks with the payload, answers tells with topic "echo") and
// "crasher" (raises at once). Each example must return "ok".
func TestDocExamples(t *testing.T) {
	for _, page := range []string{"process.md", "errors.md", "channel.md", "time.md", "log.md", "json.md"} {
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

// TestEmbeddingDocShowsTestedExamples: every Go block of
// docs/lua/embedding.md is code of lua/example_test.go (or, for a whole
// node, node/example_test.go), verbatim, so the page shows only what `go
// test` runs.
func TestEmbeddingDocShowsTestedExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "lua", "embedding.md"))
	if err != nil {
		t.Fatal(err)
	}
	var examples []byte
	for _, f := range []string{"example_test.go", filepath.Join("..", "node", "example_test.go")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		examples = append(examples, b...)
	}
	blocks := goBlock.FindAllSubmatch(doc, -1)
	if len(blocks) < 4 {
		t.Fatalf("embedding.md has %d go blocks", len(blocks))
	}
	for i, b := range blocks {
		if !bytes.Contains(examples, b[1]) {
			t.Errorf("go block %d of embedding.md is not in lua/example_test.go or node/example_test.go:\n%s", i+1, b[1])
		}
	}
}

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")
