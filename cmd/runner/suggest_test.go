package main

import (
	"strings"
	"testing"
)

// TestUnknownFlagsSayWhatWasMeant: a misspelt flag or --limit key gets a
// "did you mean" on the command's one line of error, for every command,
// with where the flags are listed; a flag far from any gets none. The
// usage is not printed (it was 40 lines above the one that mattered);
// --help prints it.
func TestUnknownFlagsSayWhatWasMeant(t *testing.T) {
	tests := []struct {
		args []string
		last string
	}{
		{[]string{"run", "--htpp", ":8080"}, "runner run: flag provided but not defined: -htpp; did you mean --http? (runner run --help lists its flags)"},
		{[]string{"run", "--no-wach", "x.yaml"}, "runner run: flag provided but not defined: -no-wach; did you mean --no-watch? (runner run --help lists its flags)"},
		{[]string{"validate", "--strickt", "x.yaml"}, "runner validate: flag provided but not defined: -strickt; did you mean --strict? (runner validate --help lists its flags)"},
		{[]string{"stubs", "--luarcc", "x", "dir"}, "runner stubs: flag provided but not defined: -luarcc; did you mean --luarc? (runner stubs --help lists its flags)"},
		{[]string{"send", "--htp-token-file", "x", "a", "b", "c"}, "runner send: flag provided but not defined: -htp-token-file; did you mean --http-token-file? (runner send --help lists its flags)"},
		{[]string{"ask", "--timout", "1s", "a", "b", "c"}, "runner ask: flag provided but not defined: -timout; did you mean --timeout? (runner ask --help lists its flags)"},
		{[]string{"run", "--zzzzzzzz"}, "runner run: flag provided but not defined: -zzzzzzzz (runner run --help lists its flags)"},
		{[]string{"validate", "--limit", "router.pool.sise=5", "x.yaml"}, "runner validate: --limit router.pool.sise: no such bound; did you mean router.pool.size? (see docs/configuration.md#bounds for the list)"},
	}
	for _, tt := range tests {
		code, _, errs := runCLI(tt.args...)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != 2 || lines[len(lines)-1] != tt.last {
			t.Errorf("%v: exit %d, last line %q, want %q", tt.args, code, lines[len(lines)-1], tt.last)
		}
		if strings.Contains(tt.last, "flag provided") && len(lines) != 1 {
			t.Errorf("%v: %d lines, want the error alone:\n%s", tt.args, len(lines), errs)
		}
	}
	// --help prints the usage, and exits 0.
	for _, cmd := range []string{"run", "validate", "stubs", "send", "ask"} {
		code, _, errs := runCLI(cmd, "--help")
		if code != 0 || !strings.HasPrefix(errs, "usage:") || !strings.Contains(errs, "runner "+cmd) || !strings.Contains(errs, "  --") {
			t.Errorf("%s --help: exit %d\n%s", cmd, code, errs)
		}
	}
}

// Outside the repository, a bare runner run says how to start, not that
// config.example.yaml cannot be read.
func TestRunWithoutAPathSaysHowToStart(t *testing.T) {
	t.Chdir(t.TempDir())
	code, _, errs := runCLI("run")
	if code != 2 || !strings.Contains(errs, "no configuration: give a PATH") || !strings.Contains(errs, "runner run app.yaml") || strings.Contains(errs, "cannot read") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
}
