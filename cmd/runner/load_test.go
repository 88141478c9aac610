package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/node"
)

// bigConfig writes a configuration of n process.lua entries (n a multiple
// of 100) sharing one source, 100 to a file.
func bigConfig(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.lua"), []byte("return {main = function() end}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for f := range n / 100 {
		var b strings.Builder
		fmt.Fprintf(&b, "namespace: ns%d\nentries:\n", f)
		for i := range 100 {
			fmt.Fprintf(&b, "  - {name: w%d, kind: process.lua, source: \"file://w.lua\", mailbox_size: %d, args: [%d]}\n", i, i, i)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.yaml", f)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// SIGINT or SIGTERM while validate reads a large configuration stops it at
// once, with the shell's code for the signal, and abandons the load rather
// than waiting for it.
func TestValidateInterrupted(t *testing.T) {
	dir := bigConfig(t, 20_000)
	var out, errb bytes.Buffer
	start := time.Now()
	if code := cli([]string{"validate", dir}, &out, &errb, nil, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	full := time.Since(start)
	for _, tt := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		out.Reset()
		errb.Reset()
		sigs := make(chan os.Signal, 1)
		sigs <- tt.sig // arrives while the configuration is being read
		start := time.Now()
		code := cli([]string{"validate", dir}, &out, &errb, sigs, nil)
		took := time.Since(start)
		if code != tt.code || out.Len() != 0 || !strings.Contains(errb.String(), "runner validate: stopped by "+tt.sig.String()) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", tt.sig, code, out.String(), errb.String())
		}
		if took > full/2 {
			t.Fatalf("%s: validate took %s to stop; a whole validation takes %s", tt.sig, took, full)
		}
	}
}

// runner run stops at once, exit 0, when a stop signal arrives while the
// configuration loads; nothing was started.
func TestRunInterruptedWhileLoading(t *testing.T) {
	dir := bigConfig(t, 20_000)
	sigs := make(chan os.Signal, 1)
	sigs <- syscall.SIGTERM
	stderr := &testutil.SyncBuffer{}
	code := cli([]string{"run", "--log-format", "json", "--no-watch", dir}, &strings.Builder{}, stderr, sigs, func() { t.Error("forced exit") })
	if code != 0 || !strings.Contains(stderr.String(), `"msg":"stopped while loading the configuration"`) || strings.Contains(stderr.String(), `"msg":"started"`) {
		t.Fatalf("exit %d; logs:\n%s", code, stderr.String())
	}
}

// The size limits and bounds are flags of run and validate.
func TestLoadFlags(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "w.lua"), []byte("return {main = function() end}\n"+strings.Repeat("-- padding\n", 200)), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - {name: w, kind: process.lua, source: "file://w.lua"}
  - {name: p, kind: router.pool, routee: w, size: 1500}
`), 0o644)
	mkfifo := filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(mkfifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{dir}, 1, "app:p: size: must be at most 1000 (limit router.pool.size), got 1500"},
		{[]string{"--limit", "router.pool.size=2000", dir}, 0, "ok: 2 entries in 1 file"},
		{[]string{dir, "--limit", "router.pool.size=2000", "--max-source-size", "1KiB"}, 1, "app:w: source: source w.lua: larger than the limit of 1 KiB for Lua sources"},
		{[]string{"--limit", "router.pool.size=2000", "--max-config-size", "64", dir}, 1, "c.yaml: cannot read: larger than the limit of 64 bytes for configuration files"},
		{[]string{"--limit", "router.pool.sise=2000", dir}, 2, "--limit router.pool.sise: no such bound"},
		{[]string{"--limit", "router.pool.size", dir}, 2, `want KIND.FIELD=N`},
		{[]string{"--max-config-size", "8XB", dir}, 2, "want a positive size in bytes"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := cli(append([]string{"validate"}, tt.args...), &out, &errb, nil, nil)
		if code != tt.code || !strings.Contains(out.String()+errb.String(), tt.want) {
			t.Errorf("validate %v: exit %d, want %d and %q:\n%s%s", tt.args, code, tt.code, tt.want, out.String(), errb.String())
		}
		if code != 2 && !strings.Contains(errb.String(), "configuration file skipped: not a regular file") {
			t.Errorf("validate %v: the pipe was not reported:\n%s", tt.args, errb.String())
		}
	}
	var errb bytes.Buffer
	if code := cli([]string{"run", "--limit", "nope.x=1", dir}, &bytes.Buffer{}, &errb, nil, nil); code != 2 || !strings.Contains(errb.String(), "--limit nope.x: no such bound") {
		t.Errorf("run with a bad --limit: exit %d: %s", code, errb.String())
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"100": 100, "8MiB": 8 << 20, "1 KiB": 1 << 10, "2GiB": 2 << 30} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5MiB", "8MB", "2TiB", "99999GiB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

// docs/configuration.md lists every bound of the runner's kinds with its
// default, and nothing else.
func TestBoundsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Bounds\n")
	if !ok {
		t.Fatal("docs/configuration.md has no Bounds section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	documented := map[string]int{}
	for _, line := range strings.Split(section, "\n") {
		var name string
		var n int
		if _, err := fmt.Sscanf(line, "| `%s | %d |", &name, &n); err == nil {
			documented[strings.TrimSuffix(name, "`")] = n
		}
	}
	bounds := node.DefaultKinds(io.Discard).Bounds()
	if fmt.Sprint(documented) != fmt.Sprint(bounds) {
		t.Fatalf("documented bounds\n %v\ndiffer from the kinds'\n %v", documented, bounds)
	}
}
