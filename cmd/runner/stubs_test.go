package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `runner stubs DIR` writes the stubs of the runner's own host (with pg,
// router and supervisor) and a .luarc.json that points at them.
func TestStubsCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	luarc := filepath.Join(dir, ".luarc.json")
	if code := cli([]string{"stubs", "--luarc", luarc, filepath.Join(dir, "types")}, &out, &errOut, nil, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, f := range []string{"pg.lua", "router.lua", "supervisor.lua", "process.lua", "sandbox.lua"} {
		if _, err := os.Stat(filepath.Join(dir, "types", f)); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(luarc)
	if err != nil || !strings.Contains(string(b), `"types"`) {
		t.Fatalf(".luarc.json: %s %v", b, err)
	}
	if code := cli([]string{"stubs"}, &out, &errOut, nil, nil); code != 2 {
		t.Fatalf("without DIR: exit %d", code)
	}
}
