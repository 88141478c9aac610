package luatest

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
)

var luaBlock = regexp.MustCompile("(?s)```lua\n(.*?)```")

// DocExamples returns the ```lua blocks of a page under docs/lua: each is
// the script of an entry that a test runs and that must return "ok".
func DocExamples(t *testing.T, page string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "lua", page))
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

// moduleRoot is the root of the Go module, found from this file's path
// (lua/internal/luatest/docs.go), so tests of any package find the docs.
func moduleRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the module root")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}
