package pgscope

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The pg_SUITE scenarios from Lua, end to end: the runner loads the example
// config (docs/kinds/pg-scope.example.yaml), starts both scopes and runs
// the suite script as --main, which raises on the first failed check.
func TestRunnerLuaSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/runner")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "runner")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/runner")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build runner: %v\n%s", err, out)
	}
	run := exec.CommandContext(ctx, bin, "run", "--no-watch", "--log-level", "warn", "--main", "app:pg_suite", "docs/kinds/pg-scope.example.yaml")
	run.Dir = root
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("runner: %v\n%s", err, out)
	}
	for _, c := range []string{"basic", "single", "exit_cleanup", "leave_exit_race", "monitor", "monitor_self", "broadcast", "limits"} {
		if !strings.Contains(string(out), "pg_suite: "+c+" ok") {
			t.Errorf("case %s did not report ok:\n%s", c, out)
		}
	}
}
