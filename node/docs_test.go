package node_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The pages that show an embedder starting a node show this package's
// tested example, verbatim: every Go block of docs/process-core.md that
// uses node.Start, and of docs/lua/embedding.md, is code of
// example_test.go (lua's docs test checks embedding.md's other blocks).
func TestDocsShowTheTestedExample(t *testing.T) {
	examples, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"process-core.md", filepath.Join("lua", "embedding.md")} {
		doc, err := os.ReadFile(filepath.Join("..", "docs", page))
		if err != nil {
			t.Fatal(err)
		}
		shown := 0
		for _, b := range goBlock.FindAllSubmatch(doc, -1) {
			if !bytes.Contains(b[1], []byte("node.Start(")) {
				continue
			}
			shown++
			if !bytes.Contains(examples, b[1]) {
				t.Errorf("a Go block of docs/%s is not in node/example_test.go:\n%s", page, b[1])
			}
		}
		if shown == 0 {
			t.Errorf("docs/%s shows no embedder starting a node (node.Start)", page)
		}
	}
}

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// An embedder's go.mod needs the replace of every module Proctor's own
// go.mod replaces (Go ignores a dependency's replace directives), and
// docs/lua/embedding.md shows each one, pointing into a checkout of
// Proctor: without it the Lua host does not build.
func TestDocsShowTheReplacesAnEmbedderNeeds(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "lua", "embedding.md"))
	if err != nil {
		t.Fatal(err)
	}
	replaces := regexp.MustCompile(`(?m)^replace (\S+) => \./(\S+)$`).FindAllSubmatch(mod, -1)
	if len(replaces) == 0 {
		t.Fatal("go.mod replaces nothing: drop the go.mod paragraph of embedding.md and this test")
	}
	for _, r := range replaces {
		want := "replace " + string(r[1]) + " => ../proctor/" + string(r[2])
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("docs/lua/embedding.md does not show an embedder's %q", want)
		}
	}
}
