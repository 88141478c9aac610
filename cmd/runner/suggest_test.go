package main

import (
	"strings"
	"testing"
)

// TestUnknownFlagsSayWhatWasMeant: a misspelt flag or --limit key gets a
// "did you mean" on the command's last line, for every command; a flag
// far from any gets none.
func TestUnknownFlagsSayWhatWasMeant(t *testing.T) {
	tests := []struct {
		args []string
		last string
	}{
		{[]string{"run", "--htpp", ":8080"}, "runner run: flag provided but not defined: -htpp; did you mean --http?"},
		{[]string{"run", "--no-wach", "x.yaml"}, "runner run: flag provided but not defined: -no-wach; did you mean --no-watch?"},
		{[]string{"validate", "--strickt", "x.yaml"}, "runner validate: flag provided but not defined: -strickt; did you mean --strict?"},
		{[]string{"stubs", "--luarcc", "x", "dir"}, "runner stubs: flag provided but not defined: -luarcc; did you mean --luarc?"},
		{[]string{"send", "--htp-token-file", "x", "a", "b", "c"}, "runner send: flag provided but not defined: -htp-token-file; did you mean --http-token-file?"},
		{[]string{"ask", "--timout", "1s", "a", "b", "c"}, "runner ask: flag provided but not defined: -timout; did you mean --timeout?"},
		{[]string{"run", "--zzzzzzzz"}, "runner run: flag provided but not defined: -zzzzzzzz"},
		{[]string{"validate", "--limit", "router.pool.sise=5", "x.yaml"}, "runner validate: --limit router.pool.sise: no such bound; did you mean router.pool.size? (see docs/configuration.md#bounds for the list)"},
	}
	for _, tt := range tests {
		code, _, errs := runCLI(tt.args...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != 2 || lines[len(lines)-1] != tt.last {
			t.Errorf("%v: exit %d, last line %q, want %q", tt.args, code, lines[len(lines)-1], tt.last)
		}
	}
}
