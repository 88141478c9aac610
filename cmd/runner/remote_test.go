package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/kinds/supervisor"
)

// tokenFile writes a token file and returns its path.
func tokenFile(t *testing.T, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runCLI runs one runner command and returns its exit code and output.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli(args, &out, &errb, nil, nil)
	return code, out.String(), errb.String()
}

func TestRemoteCommands(t *testing.T) {
	dir := copyDemo(t)
	tok := tokenFile(t, "0123456789abcdef0123456789abcdef")
	r := runInProcess(t, "--log-format", "json", "--no-watch", "--http", "127.0.0.1:0", "--http-token-file", tok, filepath.Join(dir, "config.example.yaml"))
	addr := r.app.n.HTTPAddr().String()

	code, out, errs := runCLI("entries", addr)
	if code != 0 || !strings.HasPrefix(out, "ID ") || !regexpLine(out, `app:counter\s+process.lua\s+running`) || !regexpLine(out, `app:hello\s+process.lua\s+defined`) {
		t.Fatalf("entries: %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI("tree", "http://"+addr)
	if code != 0 || !regexpLine(out, `^app:core  supervisor one_for_one  <.*>  running$`) ||
		!regexpLine(out, `^└─ jobs  app:workers  supervisor  running  <.*>  restarts=0$`) ||
		!regexpLine(out, `^   └─ w2  app:shard  worker  running  <.*>  restarts=0$`) {
		t.Fatalf("tree: %d\n%s%s", code, out, errs)
	}

	// ask prints the reply as JSON; send prints nothing.
	if code, out, errs = runCLI("ask", "--http-token-file", tok, addr, "app:counter", "incr", "5"); code != 0 || strings.TrimSpace(out) != "5" {
		t.Fatalf("ask incr: %d %q %s", code, out, errs)
	}
	if code, out, errs = runCLI("send", addr, "app:counter", "incr", "2", "--http-token-file", tok); code != 0 || out != "" {
		t.Fatalf("send: %d %q %s", code, out, errs)
	}
	if code, out, errs = runCLI("ask", "--timeout", "2s", "--http-token-file", tok, addr, "app:counter", "get"); code != 0 || strings.TrimSpace(out) != "7" {
		t.Fatalf("ask get: %d %q %s", code, out, errs)
	}

	// --key reaches a partition's worker, or a consistent_hash pool's
	// routee, for that key, whatever the payload.
	for _, dest := range []string{"app:shards", "app:explorers"} {
		var want string
		for i := range 3 {
			code, out, errs := runCLI("ask", "--http-token-file", tok, "--key", "user-42", addr, dest, "get", fmt.Sprintf(`{"n":%d}`, i))
			var reply struct {
				Worker string         `json:"worker"`
				Key    map[string]any `json:"key"`
			}
			if code != 0 || json.Unmarshal([]byte(out), &reply) != nil || reply.Worker == "" || reply.Key["n"] != float64(i) {
				t.Fatalf("ask --key %s: %d %q %s", dest, code, out, errs)
			}
			if want == "" {
				want = reply.Worker
			} else if reply.Worker != want {
				t.Fatalf("ask --key user-42 %s went to %s, then %s", dest, want, reply.Worker)
			}
		}
	}
	inst, _ := r.app.rt.Instance("app:shards")
	owner, err := inst.(*supervisor.Supervisor).Route("user-42")
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI("ask", "--http-token-file", tok, "--key", "user-42", addr, "app:shards", "get"); code != 0 || !strings.Contains(out, owner.String()) {
		t.Fatalf("ask --key user-42 app:shards answered %q, not from the owner %s", out, owner)
	}

	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ask", "--http-token-file", tok, "--key", "k", addr, "app:counter", "get"}, 1, "a key routes a supervisor.partition or a consistent_hash router.pool, not a process.lua"},
		{[]string{"ask", "--http-token-file", tok, "--key", "k", addr, "app:crunchers", "get"}, 1, "a key routes only a consistent_hash pool"},
		{[]string{"ask", "--http-token-file", tok, "--key", "k", addr, "app:hello", "get"}, 1, "400 Bad Request: app:hello: entry of another kind: a key routes a supervisor.partition"},
		{[]string{"send", "--http-token-file", tok, "--key", "k", addr, owner.String(), "get"}, 1, "must be an entry ID of this node"},
		{[]string{"send", addr, "app:counter", "incr"}, 1, "401 Unauthorized"},
		{[]string{"ask", "--http-token-file", tok, addr, "app:nobody", "get"}, 1, "404 Not Found"},
		{[]string{"ask", "--http-token-file", tok, "--timeout", "200ms", addr, "app:ticker", "get"}, 1, "504 Gateway Timeout"},
		{[]string{"send", "--http-token-file", tok, addr, "app:counter", "incr", "{bad"}, 2, "is not JSON"},
		{[]string{"send", "--http-token-file", tok, addr, "app:counter"}, 2, "want ADDR DEST TOPIC"},
		{[]string{"ask", "--http-token-file", tok, "--timeout", "0s", addr, "app:counter", "get"}, 2, "--timeout"},
		{[]string{"entries"}, 2, "want ADDR"},
		{[]string{"tree", "not an address"}, 2, "ADDR"},
		{[]string{"entries", "127.0.0.1:1"}, 1, "runner entries:"},
		{[]string{"send", "--http-token-file", filepath.Join(dir, "missing"), addr, "a", "b"}, 2, "--http-token-file"},
	} {
		code, out, errs := runCLI(tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d with %q", tt.args, code, out, errs, tt.code, tt.want)
		}
	}
	if c := r.stop(t); c != 0 {
		t.Fatalf("exit %d", c)
	}
}

// Without --http-token-file the write endpoints are off.
func TestWriteEndpointsOffByDefault(t *testing.T) {
	dir := copyDemo(t)
	r := runInProcess(t, "--log-format", "json", "--no-watch", "--http", "127.0.0.1:0", filepath.Join(dir, "config.example.yaml"))
	tok := tokenFile(t, "0123456789abcdef0123456789abcdef")
	code, _, errs := runCLI("send", "--http-token-file", tok, r.app.n.HTTPAddr().String(), "app:counter", "incr")
	if code != 1 || !strings.Contains(errs, "405 Method Not Allowed: write endpoints are off") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r.stop(t)
}

func TestOpsFlags(t *testing.T) {
	short := tokenFile(t, "short")
	good := tokenFile(t, "0123456789abcdef")
	spaced := tokenFile(t, "0123456789 abcdef0123")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--http-token-file", good}, "--http-token-file needs --http"},
		{[]string{"--pprof"}, "--pprof needs --http"},
		{[]string{"--http", ":0", "--http-token-file", short}, "want at least 16 bytes"},
		{[]string{"--http", ":0", "--http-token-file", spaced}, "spaces"},
		{[]string{"--http", ":0", "--http-token-file", filepath.Dir(good)}, "regular file"},
		{[]string{"--dead-letters", "-1"}, "--dead-letters -1"},
	} {
		if _, err := parseRun(tt.args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v; want %q", tt.args, err, tt.want)
		}
	}
	f, err := parseRun([]string{"--http", "127.0.0.1:0", "--http-token-file", good, "--pprof", "--dead-letters", "0"}, &bytes.Buffer{})
	if err != nil || f.ops.token != "0123456789abcdef" || !f.ops.pprof || f.ops.keep() != -1 {
		t.Fatalf("%+v %v", f, err)
	}
	if f, _ := parseRun(nil, &bytes.Buffer{}); f.ops.token != "" || f.ops.pprof || f.ops.keep() != 256 {
		t.Fatalf("defaults %+v", f.ops)
	}
}

// regexpLine reports whether a line of s matches the pattern.
func regexpLine(s, pattern string) bool {
	return regexp.MustCompile("(?m)" + pattern).MatchString(s)
}
