package lua

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	runnerOnce sync.Once
	runnerBin  string
	runnerErr  error
)

// runner builds cmd/runner once for the end-to-end tests.
func runner(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: not in -short")
	}
	runnerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "proctor-runner")
		if err != nil {
			runnerErr = err
			return
		}
		runnerBin = filepath.Join(dir, "runner")
		out, err := exec.Command("go", "build", "-o", runnerBin, "../cmd/runner").CombinedOutput()
		if err != nil {
			runnerErr = errors.New(string(out))
		}
	})
	if runnerErr != nil {
		t.Fatalf("build runner: %v", runnerErr)
	}
	return runnerBin
}

type runResult struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

func runRunner(t *testing.T, dir string, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, runner(t), args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := runResult{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run runner: %v", err)
	}
	return r
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const e2eConfig = `namespace: app
entries:
  - name: svc
    kind: process.lua
    source: file://svc.lua
    args: ["hi"]
    lifecycle: {auto_start: true}
  - name: main
    kind: process.lua
    source: file://main.lua
  - name: boom
    kind: process.lua
    source: file://boom.lua
  - name: spin
    kind: process.lua
    source: file://spin.lua
    lifecycle: {auto_start: true}
`

var e2eFiles = map[string]string{
	"config.yaml": e2eConfig,
	"svc.lua": `
return { main = function(greeting)
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    msg:reply(greeting .. " " .. tostring(msg:payload()))
  end
end }`,
	"main.lua": `
local json = require("json")
return { main = function(...)
  local args = {...}
  local v = assert(process.ask("app:svc", "greet", args[1]))
  print(v, json.encode(args))
  return "done"
end }`,
	"boom.lua": "return { main = function()\n  error(\"kaput\")\nend }\n",
	"spin.lua": `return { main = function() while true do end end }`,
}

func TestRunnerMain(t *testing.T) {
	dir := writeFiles(t, e2eFiles)
	r := runRunner(t, dir, "run", "--no-watch", "--main", "app:main", "config.yaml", "--", "world", "x")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "hi world\t[\"world\",\"x\"]\n") {
		t.Fatalf("stdout = %q", r.stdout)
	}
	// app:spin loops forever; shutdown must still stop it within its deadline.
	if r.took > 30*time.Second {
		t.Fatalf("took %s to stop a runaway script", r.took)
	}
}

func TestRunnerMainRaises(t *testing.T) {
	dir := writeFiles(t, e2eFiles)
	r := runRunner(t, dir, "run", "--no-watch", "--main", "app:boom", "config.yaml")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "boom.lua:2: kaput") {
		t.Fatalf("stderr lacks the error with file:line:\n%s", r.stderr)
	}
}

func TestRunnerValidateLuaErrors(t *testing.T) {
	files := map[string]string{
		"config.yaml": `namespace: app
entries:
  - name: bad
    kind: process.lua
    source: file://bad.lua
  - name: nomethod
    kind: process.lua
    source: file://ok.lua
    method: start
`,
		"bad.lua": "local x = \nreturn {}\n",
		"ok.lua":  "return { main = function() end }",
	}
	dir := writeFiles(t, files)
	r := runRunner(t, dir, "validate", "config.yaml")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	out := r.stdout + r.stderr
	for _, want := range []string{"app:bad: source: syntax error: bad.lua:2:", `app:nomethod: method: ok.lua defines no function "start"`} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
}
