package luatest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	runnerOnce sync.Once
	runnerBin  string
	runnerErr  error
)

// runner builds cmd/runner once per test binary for the end-to-end tests.
func runner(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: not in -short")
	}
	runnerOnce.Do(func() {
		src := filepath.Join(moduleRoot(t), "cmd", "runner")
		dir, err := os.MkdirTemp("", "proctor-runner")
		if err != nil {
			runnerErr = err
			return
		}
		runnerBin = filepath.Join(dir, "runner")
		out, err := exec.Command("go", "build", "-o", runnerBin, src).CombinedOutput()
		if err != nil {
			runnerErr = errors.New(string(out))
		}
	})
	if runnerErr != nil {
		t.Fatalf("build runner: %v", runnerErr)
	}
	return runnerBin
}

func removeRunner() {
	if runnerBin != "" {
		_ = os.RemoveAll(filepath.Dir(runnerBin))
	}
}

// RunResult is how a run of the runner ended.
type RunResult struct {
	Code           int
	Stdout, Stderr string
	Took           time.Duration
}

// RunRunner runs the runner binary with args in dir (skipped in -short).
func RunRunner(t *testing.T, dir string, args ...string) RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, runner(t), args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := RunResult{Stdout: out.String(), Stderr: errb.String(), Took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		t.Fatalf("run runner: %v", err)
	}
	return r
}

// WriteFiles writes files (name to content) into a new temporary directory
// and returns it.
func WriteFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
