package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"go.uber.org/goleak"
)

var binDir string

// TestMain lets four parallel tests run at once: those are the ones that
// run the runner as a child process (each on free ports, in a directory of
// its own) and wait for what it logs.
func TestMain(m *testing.M) {
	testutil.WaitingTests(4)
	dir, err := os.MkdirTemp("", "runner-test")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// A memberlist probe runs on after Shutdown until its own
		// timeouts end (the in-process cluster tests): as in cluster/.
		if err := goleak.Find(testutil.IgnoreMemberlistProbe); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the runner once for the tests that run it as users do.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binPath = filepath.Join(binDir, "runner")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestValidateBad(t *testing.T) {
	var out, errb bytes.Buffer
	code := cli([]string{"validate", "testdata/bad", "testdata/bad/nocfg"}, &out, &errb, nil, nil)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errb.String())
	}
	// Every mistake, each at its position; the kinds word their own
	// messages, so only the place and the gist are pinned here.
	want := []string{
		"testdata/bad/cycle.yaml:6:30: cyc:a: lifecycle.depends_on[0]: dependency cycle: cyc:a -> cyc:b -> cyc:a",
		"testdata/bad/dup1.yaml:3:5: app:worker: name: duplicate entry ID app:worker: also declared at testdata/bad/dup2.yaml:3:5",
		"testdata/bad/dup2.yaml:3:5: app:worker: name: duplicate entry ID app:worker: also declared at testdata/bad/dup1.yaml:3:5",
		"testdata/bad/empty.yaml:1:1: empty file",
		`testdata/bad/entrynotmap.yaml:3:5: entries[0]: an entry must be a mapping, not the scalar "just a string"`,
		"testdata/bad/invalid.yaml:6:19: inv:v: mailbox_size: ",
		"testdata/bad/invalid.yaml:8:33: inv:v: lifecycle.restart.backoff_factor: must be between 1 and 100, got 0.5",
		`testdata/bad/invalid.yaml:8:53: inv:v: lifecycle.restart.initial_delay: must be a duration such as 250ms or 5s, got "soon"`,
		"testdata/bad/list.yaml:1:1: the file must be a mapping with namespace and entries, not a list",
		"testdata/bad/lua.yaml:5:13: lua:w: source: source missing.lua: no such file or directory",
		"testdata/bad/nocfg: directory holds no configuration (*.yaml or *.yml files)",
		"testdata/bad/nons.yaml:1:1: namespace: required",
		"testdata/bad/notyaml.yaml:1:1: not valid YAML: ",
		"testdata/bad/refs.yaml:7:13: refs:missing: routee: references refs:nobody, which is not declared",
		"testdata/bad/refs.yaml:11:13: refs:wrong: routee: references refs:scope, a pg.scope; must be process.lua",
		`testdata/bad/unknown.yaml:4:11: unk:a: kind: unknown kind "process.lau" (did you mean "process.lua"?)`,
		`testdata/bad/unknown.yaml:9:5: unk:b: mailbox_sise: unknown field (did you mean "mailbox_size"?)`,
		"testdata/bad/unreadable.yaml: cannot read: no such file or directory",
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if len(lines) != len(want)+1 || lines[len(lines)-1] != fmt.Sprintf("%d errors", len(want)) {
		t.Fatalf("got %d lines, want %d errors and a count:\n%s", len(lines), len(want), errb.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n got  %s\n want %s…", i, lines[i], w)
		}
	}
	if out.Len() != 0 {
		t.Errorf("stdout: %q", out.String())
	}
}

func TestValidateGood(t *testing.T) {
	var out, errb bytes.Buffer
	if code := cli([]string{"validate", "../../config.example.yaml"}, &out, &errb, nil, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), "ok: ") {
		t.Fatalf("stdout %q", out.String())
	}
	if code := cli([]string{"validate"}, &out, &errb, nil, nil); code != 2 {
		t.Fatalf("validate without paths: exit %d", code)
	}
}

func TestCommands(t *testing.T) {
	var out, errb bytes.Buffer
	if code := cli([]string{"version"}, &out, &errb, nil, nil); code != 0 || !strings.HasPrefix(out.String(), "runner ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
	if code := cli(nil, &out, &errb, nil, nil); code != 2 {
		t.Fatalf("no command: %d", code)
	}
	if code := cli([]string{"frobnicate"}, &out, &errb, nil, nil); code != 2 || !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: %d %s", code, errb.String())
	}
	errb.Reset()
	if code := cli([]string{"run", "--log-level", "loud"}, &out, &errb, nil, nil); code != 2 || !strings.Contains(errb.String(), `unknown log level "loud"`) {
		t.Fatalf("bad flag: %d %s", code, errb.String())
	}
	errb.Reset()
	if code := cli([]string{"run", "testdata/bad/lua.yaml"}, &out, &errb, nil, nil); code != 1 || !strings.Contains(errb.String(), "lua.yaml:5:13") {
		t.Fatalf("run on a bad config: %d %s", code, errb.String())
	}
}

func TestParseRun(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "key")
	os.WriteFile(secret, []byte("0123456789abcdef\n"), 0o600)
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("abc"), 0o600)
	long := filepath.Join(t.TempDir(), "long")
	os.WriteFile(long, []byte("  any text of forty bytes will do here.. \n"), 0o600)
	tests := []struct {
		args    []string
		check   func(*runFlags) bool
		wantErr string
	}{
		{[]string{}, func(f *runFlags) bool {
			return len(f.paths) == 1 && f.paths[0] == "config.example.yaml" && f.mainArgs == nil
		}, ""},
		{[]string{"a.yaml", "--no-watch", "dir", "--http", "127.0.0.1:0"}, func(f *runFlags) bool {
			return fmt.Sprint(f.paths) == "[a.yaml dir]" && f.noWatch && f.http == "127.0.0.1:0"
		}, ""},
		{[]string{"--main", "app:m", "c.yaml", "--", "x", "--no-watch", "y"}, func(f *runFlags) bool {
			return f.mainID == "app:m" && fmt.Sprint(f.mainArgs) == "[x --no-watch y]" && !f.noWatch && fmt.Sprint(f.paths) == "[c.yaml]"
		}, ""},
		{[]string{"--main", "app:m", "--"}, func(f *runFlags) bool { return f.mainArgs != nil && len(f.mainArgs) == 0 }, ""},
		{[]string{"--", "x"}, nil, "arguments after -- are for --main"},
		{[]string{"--http", "nonsense"}, nil, "--http"},
		{[]string{"--node", "a<b"}, nil, "a node name may not hold"},
		{[]string{"--log-format", "xml"}, nil, "unknown log format"},
		{[]string{"--cluster-join", "10.0.0.1:7946"}, nil, "need --cluster-bind"},
		{[]string{"--cluster-bind", "127.0.0.1:x"}, nil, "port must be a number"},
		{[]string{"--cluster-bind", "127.0.0.1:7946", "--cluster-join", "a:1, b:2", "--cluster-secret-file", secret, "--node", "n1"}, func(f *runFlags) bool {
			return f.cluster.enabled() && fmt.Sprint(f.cluster.Join) == "[a:1 b:2]" && string(f.cluster.Secret) == "0123456789abcdef" && f.node == "n1"
		}, ""},
		{[]string{"--cluster-bind", "127.0.0.1:7946", "--cluster-secret-file", short}, nil, "the secret is 3 bytes after trimming whitespace; want at least 16"},
		{[]string{"--cluster-bind", "127.0.0.1:7946", "--cluster-secret-file", long}, func(f *runFlags) bool {
			return string(f.cluster.Secret) == "any text of forty bytes will do here.."
		}, ""},
		{[]string{"--node", "svc@n1"}, nil, "a node name may not hold"},
		{[]string{"--cluster-transport-bind", "127.0.0.1:0"}, nil, "need --cluster-bind"},
		{[]string{"--cluster-bind", "127.0.0.1:0", "--cluster-transport-bind", "nope"}, nil, "--cluster-transport-bind"},
		{[]string{"--cluster-bind", "127.0.0.1:0", "--cluster-join", "seeds.example:7946"}, func(f *runFlags) bool {
			return fmt.Sprint(f.cluster.Join) == "[seeds.example:7946]"
		}, ""},
		{[]string{"--cluster-bind", "127.0.0.1:7946", "--cluster-secret-file", "/nonexistent/key"}, nil, "no such file"},
		{[]string{"--cluster-bind", "127.0.0.1:7946", "--cluster-tls-cert", "c.pem"}, nil, "go together"},
		{[]string{"--cluster-tls-cert", "c.pem", "--cluster-tls-key", "k.pem", "--cluster-tls-ca", "ca.pem"}, nil, "need --cluster-bind"},
		{[]string{"--cluster-insecure"}, nil, "need --cluster-bind"},
		{[]string{"--cluster-bind", "127.0.0.1:7946", "--cluster-insecure", "--cluster-tls-cert", "c.pem", "--cluster-tls-key", "k.pem", "--cluster-tls-ca", "ca.pem"}, func(f *runFlags) bool {
			return f.cluster.Insecure && f.cluster.TLS != nil && f.cluster.TLS.CertFile == "c.pem" && f.cluster.TLS.KeyFile == "k.pem" && f.cluster.TLS.CAFile == "ca.pem"
		}, ""},
	}
	for _, tt := range tests {
		f, err := parseRun(tt.args, io.Discard)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !tt.check(f) {
			t.Errorf("%v: %+v %v", tt.args, f, err)
		}
	}
}

// runner is a running binary with its output collected.
type runner struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr []string
	addr   chan string
	done   chan error
}

func start(t *testing.T, args ...string) *runner {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv is start with env added to the runner's environment.
func startEnv(t *testing.T, env []string, args ...string) *runner {
	t.Helper()
	r := &runner{cmd: exec.Command(binary(t), args...), addr: make(chan string, 1), done: make(chan error, 1)}
	r.cmd.Dir = "../.."
	if env != nil {
		r.cmd.Env = append(os.Environ(), env...)
	}
	r.cmd.Stdout = &r.stdout
	pipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			r.stderr = append(r.stderr, line)
			r.mu.Unlock()
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "serving HTTP" {
				r.addr <- m["addr"].(string)
			}
		}
		r.done <- r.cmd.Wait()
	}()
	t.Cleanup(func() {
		// Kill, not a look at ProcessState first: the goroutine above
		// writes it in Wait, and a runner that exited on its own (a
		// failing test's) made that a race. Kill of a process waited
		// for only returns os.ErrProcessDone.
		r.cmd.Process.Kill()
	})
	return r
}

func (r *runner) logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.stderr, "\n")
}

// waitFor polls cond with a generous deadline, printing the runner's logs
// when it never holds.
func (r *runner) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.EventuallyExplained(t, 20*time.Second, what, cond, r.logs)
}

// wait returns the exit code, failing the test past a generous deadline.
// httpAddr is the address the runner logged for its HTTP endpoint.
func (r *runner) httpAddr(t *testing.T) string {
	t.Helper()
	select {
	case a := <-r.addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatalf("no HTTP address logged:\n%s", r.logs())
		return ""
	}
}

func (r *runner) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		t.Fatalf("runner did not exit; logs:\n%s", r.logs())
	}
	return -1
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	r := start(t, "run", "--log-format", "json", "--http", "127.0.0.1:0", "config.example.yaml", "--no-watch")
	addr := r.httpAddr(t)
	base := "http://" + addr
	var entries []map[string]any
	r.waitFor(t, "the services to run", func() bool {
		code, body := httpGet(t, base+"/v1/entries")
		entries = nil
		return code == 200 && json.Unmarshal([]byte(body), &entries) == nil && statusIn(entries, "app:counter") == "running" && statusIn(entries, "app:ticker") == "running"
	})
	if statusIn(entries, "app:hello") != "defined" {
		t.Fatalf("app:hello: %v", entries)
	}
	for _, e := range entries {
		if len(e) != 4 || e["kind"] == "" || e["outdated"] != float64(0) {
			t.Fatalf("entry shape %v", e)
		}
	}
	waitReady := time.Now().Add(20 * time.Second)
	for {
		if code, _ := httpGet(t, base+"/readyz"); code == 200 {
			break
		}
		if time.Now().After(waitReady) {
			t.Fatalf("never ready:\n%s", r.logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, body := httpGet(t, base+"/v1/entries")
	json.Unmarshal([]byte(body), &entries)
	running := 0
	for _, e := range entries {
		if e["status"] == "running" {
			running++
		}
	}
	if code, body := httpGet(t, base+"/metrics"); code != 200 || !strings.Contains(body, fmt.Sprintf(`runner_entries{status="running"} %d`, running)) || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("metrics %d %.500s", code, body)
	}
	if code, body := httpGet(t, base+"/readyz"); code != 200 {
		t.Fatalf("readyz %d %s", code, body)
	}
	if code, body := httpGet(t, base+"/healthz"); code != 200 {
		t.Fatalf("healthz %d %s", code, body)
	}
	if code, body := httpGet(t, base+"/v1/entries/app:counter"); code != 200 || !strings.Contains(body, `"pid": "<`) {
		t.Fatalf("entry detail %d %s", code, body)
	}
	http.DefaultClient.CloseIdleConnections()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, r.logs())
	}
	logs := r.logs()
	if !strings.Contains(logs, `"msg":"stopping"`) || !strings.Contains(logs, `"msg":"stopped"`) {
		t.Fatalf("no clean stop logged:\n%s", logs)
	}
	if !strings.Contains(logs, `"entry":"app:counter"`) {
		t.Fatalf("entry lines lack their entry ID:\n%s", logs)
	}
}

func statusIn(entries []map[string]any, id string) string {
	for _, e := range entries {
		if e["id"] == id {
			s, _ := e["status"].(string)
			return s
		}
	}
	return ""
}

func TestMainEntry(t *testing.T) {
	t.Parallel()
	r := start(t, "run", "--log-format", "json", "--no-watch", "--main", "app:hello", "config.example.yaml", "--", "x", "y")
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, r.logs())
	}
	if out := r.stdout.String(); !strings.Contains(out, "args: x y") || !strings.Contains(out, "the counter is at") {
		t.Fatalf("stdout %q", out)
	}
	r = start(t, "run", "--log-format", "json", "--no-watch", "--cluster-bind", "127.0.0.1:0", "--main", "app:hello", "--", "fail")
	if code := r.wait(t); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, r.logs())
	}
	logs := r.logs()
	if !strings.Contains(logs, "runner: app:hello: ") || !strings.Contains(logs, "asked to fail") {
		t.Fatalf("error not printed:\n%s", logs)
	}
	// A cluster node of its own: it starts, then leaves after --main.
	if !strings.Contains(logs, `"msg":"cluster: started"`) || !strings.Contains(logs, `"msg":"cluster: left"`) {
		t.Fatalf("no cluster start and leave logged:\n%s", logs)
	}
	r = start(t, "run", "--no-watch", "--main", "app:nope")
	if code := r.wait(t); code != 1 || !strings.Contains(r.logs(), "--main app:nope: no such entry") {
		t.Fatalf("missing main: %d\n%s", r.cmd.ProcessState.ExitCode(), r.logs())
	}
	// A bare name finds the one namespace that has it; a misspelt one
	// suggests the entry.
	r = start(t, "run", "--no-watch", "--main", "hello", "config.example.yaml", "--", "bare")
	if code := r.wait(t); code != 0 || !strings.Contains(r.stdout.String(), "args: bare") {
		t.Fatalf("--main hello: %d\n%s", code, r.logs())
	}
	r = start(t, "run", "--no-watch", "--main", "helo")
	if code := r.wait(t); code != 1 || !strings.Contains(r.logs(), `--main helo: no such entry (did you mean "app:hello"?)`) {
		t.Fatalf("--main helo: %d\n%s", r.cmd.ProcessState.ExitCode(), r.logs())
	}
}
