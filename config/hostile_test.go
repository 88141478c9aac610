package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/internal/readfile"
	"github.com/proctor-run/proctor/registry"
)

// loadWithin runs a load and fails the test if it has not returned after
// the deadline: a hang is a failure, not a stuck test run.
func loadWithin(t *testing.T, l *Loader, paths ...string) (*Config, error) {
	t.Helper()
	type result struct {
		cfg *Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg, err := l.Load(paths...)
		done <- result{cfg, err}
	}()
	select {
	case r := <-done:
		return r.cfg, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("the load hangs")
		return nil, nil
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A named pipe called *.yaml in a configuration directory would block the
// read for good: it is skipped, with one warning per Loader. Named on the
// command line, or as a source, anything but a regular file is an error.
func TestLoadNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"conf/a.yaml": "namespace: a\nentries: [{name: x, kind: test.def}]\n"})
	mkfifo(t, filepath.Join(dir, "conf", "pipe.yaml"))
	var logs syncBuffer
	kinds, _ := kindtest.Kinds()
	l := &Loader{Kinds: kinds, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	for range 2 {
		cfg, err := loadWithin(t, l, filepath.Join(dir, "conf"))
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Files) != 1 || len(cfg.Entries) != 1 {
			t.Fatalf("files %v", cfg.Files)
		}
	}
	if n := strings.Count(logs.String(), "configuration file skipped: not a regular file"); n != 1 ||
		!strings.Contains(logs.String(), "pipe.yaml") || !strings.Contains(logs.String(), "a named pipe") {
		t.Fatalf("want one warning naming the pipe, got:\n%s", logs.String())
	}

	pipe := filepath.Join(dir, "conf", "pipe.yaml")
	if _, err := loadWithin(t, l, pipe); err == nil || !strings.Contains(err.Error(), pipe+": cannot read: not a regular file (a named pipe)") {
		t.Fatalf("a pipe named on the command line: %v", err)
	}

	writeFiles(t, dir, map[string]string{"src/c.yaml": `namespace: s
entries:
  - {name: zero, kind: test.svc, source: "file:///dev/zero"}
  - {name: pipe, kind: test.svc, source: "file://pipe.lua"}
  - {name: dir, kind: test.svc, source: "file://."}
`})
	mkfifo(t, filepath.Join(dir, "src", "pipe.lua"))
	_, err := loadWithin(t, l, filepath.Join(dir, "src", "c.yaml"))
	for _, want := range []string{
		"c.yaml:3:42: s:zero: source: source /dev/zero: not a regular file (a character device)",
		"c.yaml:4:42: s:pipe: source: source pipe.lua: not a regular file (a named pipe)",
		"c.yaml:5:41: s:dir: source: source .: not a regular file (a directory)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in:\n%v", want, err)
		}
	}
}

// Every file read is capped: configuration files and sources have their own
// limits, and a read never takes more than the limit, whatever the file
// claims its size is.
func TestLoadSizeLimits(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"big/c.yaml": "namespace: a\nentries: [{name: x, kind: test.def}]\n" + strings.Repeat("# padding\n", 20),
		"src/c.yaml": "namespace: b\nentries:\n  - {name: x, kind: test.svc, source: \"file://w.lua\"}\n",
		"src/w.lua":  "return {main = function() end}\n",
	})
	kinds, _ := kindtest.Kinds()
	_, err := (&Loader{Kinds: kinds, MaxConfigSize: 100}).Load(filepath.Join(dir, "big"))
	if err == nil || !strings.Contains(err.Error(), "c.yaml: cannot read: larger than the limit of 100 bytes for configuration files (--max-config-size raises it)") {
		t.Fatalf("config size: %v", err)
	}
	_, err = (&Loader{Kinds: kinds, MaxSourceSize: 10}).Load(filepath.Join(dir, "src"))
	if err == nil || !strings.Contains(err.Error(), "b:x: source: source w.lua: larger than the limit of 10 bytes for Lua sources (--max-source-size raises it)") {
		t.Fatalf("source size: %v", err)
	}
	if _, err := (&Loader{Kinds: kinds}).Load(filepath.Join(dir, "big"), filepath.Join(dir, "src")); err != nil {
		t.Fatalf("within the default limits: %v", err)
	}

	// /proc files are regular but claim a size of 0: they are not read at
	// all (TestKernelFilesNotRead), and what is read is bounded whatever a
	// file claims: a device that never ends gives limit+1 bytes.
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	if b, err := readfile.ReadOpened(zero, 0, 16); err != nil || len(b) != 17 {
		t.Fatalf("a file larger than it claims: %d bytes, %v", len(b), err)
	}
}

// Bounds: a count past its kind's bound is an error naming the limit,
// Limits override it, and a number too large for an integer says so
// rather than "must be an integer".
func TestLoadBounds(t *testing.T) {
	tests := []struct {
		name   string
		limits map[string]int
		yaml   string
		want   string // "" for no error
	}{
		{"within", nil, "{name: x, kind: test.svc, size: 100}", ""},
		{"past the bound", nil, "{name: x, kind: test.svc, size: 101}", "a:x: size: must be at most 100 (limit test.svc.size), got 101"},
		{"past int64", nil, "{name: x, kind: test.svc, size: 9223372036854775808}", "a:x: size: must be at most 100 (limit test.svc.size), got 9223372036854775808"},
		{"past uint64", nil, "{name: x, kind: test.svc, size: 184467440737095516160}", "a:x: size: must be at most 100 (limit test.svc.size), got 184467440737095516160"},
		{"raised", map[string]int{"test.svc.size": 1000}, "{name: x, kind: test.svc, size: 1000}", ""},
		{"lowered", map[string]int{"test.svc.size": 2}, "{name: x, kind: test.svc, size: 3}", "must be at most 2 (limit test.svc.size), got 3"},
		{"plain int too large", nil, "{name: x, kind: test.def, size: 9223372036854775807}", "a:x: size: too large: the most an integer field takes is 2147483647, got 9223372036854775807"},
		{"plain int too small", nil, "{name: x, kind: test.def, size: -9223372036854775809}", "size: too small: the least an integer field takes is -2147483648"},
		{"not an integer", nil, "{name: x, kind: test.def, size: 1.5}", `size: must be an integer, got "1.5"`},
		{"max_attempts", nil, "{name: x, kind: test.svc, lifecycle: {restart: {max_attempts: 1000001}}}", "lifecycle.restart.max_attempts: must be at most 1000000 (limit lifecycle.restart.max_attempts), got 1000001"},
		{"unknown limit", map[string]int{"test.svc.sise": 5}, "{name: x, kind: test.svc}", `limit test.svc.sise: no such bound (did you mean "test.svc.size"?)`},
		{"negative limit", map[string]int{"test.svc.size": -1}, "{name: x, kind: test.svc}", "limit test.svc.size: must be 0 or more"},
	}
	kinds, _ := kindtest.Kinds()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			writeFiles(t, filepath.Dir(p), map[string]string{"c.yaml": "namespace: a\nentries:\n  - " + tt.yaml + "\n"})
			_, err := (&Loader{Kinds: kinds, Limits: tt.limits}).Load(p)
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v\nwant %q", err, tt.want)
			}
		})
	}
	if b := kinds.Bounds(); b["test.svc.size"] != 100 || b["lifecycle.restart.max_attempts"] != registry.DefaultMaxAttempts || b["processes"] != registry.DefaultMaxProcesses || len(b) != 3 {
		t.Fatalf("Bounds() = %v", b)
	}
}

// Booleans are YAML's booleans: a quoted "yes" is a string, and so are
// yes and on (YAML 1.1 read them as booleans, 1.2 does not).
func TestLoadBooleans(t *testing.T) {
	kinds, _ := kindtest.Kinds()
	for _, tt := range []struct{ value, want string }{
		{"true", ""}, {"True", ""}, {"FALSE", ""},
		{`"yes"`, `must be true or false, got the string "yes" (write booleans unquoted)`},
		{`'true'`, `must be true or false, got the string "true" (write booleans unquoted)`},
		{"yes", `must be true or false, got "yes"`},
		{"on", `must be true or false, got "on"`},
		{"1", `must be true or false, got "1"`},
	} {
		p := filepath.Join(t.TempDir(), "c.yaml")
		writeFiles(t, filepath.Dir(p), map[string]string{"c.yaml": "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {auto_start: " + tt.value + "}}\n"})
		_, err := (&Loader{Kinds: kinds}).Load(p)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.value, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), "a:x: lifecycle.auto_start: "+tt.want)):
			t.Errorf("%s: got %v\nwant %q", tt.value, err, tt.want)
		}
	}
}

// The alias budget is one for the whole configuration: many documents,
// each within any per-document limit, are refused together, and fast,
// before anything expands them.
func TestLoadAliasBudget(t *testing.T) {
	var b strings.Builder
	for i := range 80 {
		fmt.Fprintf(&b, "---\nnamespace: n%d\nentries:\n  - name: e\n    kind: test.def\n    meta:\n", i)
		b.WriteString("      a: &a [1,1,1,1,1,1,1,1,1,1]\n")
		b.WriteString("      b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n")
		b.WriteString("      c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n")
		b.WriteString("      d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n")
		b.WriteString("      e: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n")
	}
	if b.Len() > 40<<10 {
		t.Fatalf("%d bytes", b.Len())
	}
	p := filepath.Join(t.TempDir(), "c.yaml")
	writeFiles(t, filepath.Dir(p), map[string]string{"c.yaml": b.String()})
	kinds, _ := kindtest.Kinds()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := (&Loader{Kinds: kinds}).Load(p)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "aliases expand the configuration by more than 1048576 nodes (the limit for all files and documents together)") {
		t.Fatalf("got %v", err)
	}
	// Expanding what was let in costs at most the budget; expanding all of
	// it took gigabytes.
	t.Logf("allocated %d MB", (after.TotalAlloc-before.TotalAlloc)>>20)
	if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 128 {
		t.Fatalf("the load allocated %d MB", mb)
	}

	// The budget is shared across files too.
	dir := t.TempDir()
	doc := "namespace: n%d\nentries:\n  - name: e\n    kind: test.def\n    meta:\n      a: &a [1,1,1,1,1,1,1,1,1,1]\n      b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n      c: [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
	for i := range 3 {
		writeFiles(t, dir, map[string]string{fmt.Sprintf("f%d.yaml", i): fmt.Sprintf(doc, i)})
	}
	if _, err := (&Loader{Kinds: kinds}).Load(dir); err != nil {
		t.Fatalf("within the budget: %v", err)
	}
	_, err = (&Loader{Kinds: kinds, MaxAliasNodes: 2500}).Load(dir)
	if err == nil || !strings.Contains(err.Error(), "f2.yaml:1:1: aliases expand the configuration by more than 2500 nodes") {
		t.Fatalf("across files: %v", err)
	}
}

// An alias inside the node its anchor names is a cycle, reported as one
// where it is written.
func TestLoadAliasCycle(t *testing.T) {
	kinds, _ := kindtest.Kinds()
	for _, src := range []string{
		"namespace: a\nentries:\n  - &x {name: x, kind: test.def, meta: {self: *x}}\n",
		"namespace: a\nentries:\n  - name: x\n    kind: test.def\n    meta: &m\n      a: [1, 2, *m]\n",
	} {
		p := filepath.Join(t.TempDir(), "c.yaml")
		writeFiles(t, filepath.Dir(p), map[string]string{"c.yaml": src})
		_, err := (&Loader{Kinds: kinds}).Load(p)
		if err == nil || !strings.Contains(err.Error(), "is inside the node its anchor") || !strings.Contains(err.Error(), "a cycle") ||
			strings.Contains(err.Error(), "expands to more than") {
			t.Errorf("%q: got %v", src, err)
		}
	}
}

// A load is abandoned as soon as its context is done.
func TestLoadContext(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"c.yaml": "namespace: a\nentries: [{name: x, kind: test.def}]\n"})
	kinds, _ := kindtest.Kinds()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&Loader{Kinds: kinds}).LoadContext(ctx, dir); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// A Loader reads, parses and decodes again only what changed: the entries
// of an unchanged file are the very same on the next load, each source is
// built once per version however many entries name it, and a changed
// source renews exactly the entries that read it.
func TestLoaderReusesUnchanged(t *testing.T) {
	dir := t.TempDir()
	var many strings.Builder
	many.WriteString("namespace: m\nentries:\n")
	for i := range 50 {
		fmt.Fprintf(&many, "  - {name: e%d, kind: test.svc, source: \"file://lua/shared.lua\"}\n", i)
	}
	writeFiles(t, dir, map[string]string{
		"a.yaml":         "namespace: a\nentries:\n  - {name: x, kind: test.svc, source: \"file://lua/a.lua\"}\n",
		"b.yaml":         "namespace: b\nentries:\n  - {name: y, kind: test.svc, size: 1}\n",
		"m.yaml":         many.String(),
		"lua/a.lua":      "return 1",
		"lua/shared.lua": "return 2",
	})
	kinds, svc := kindtest.Kinds()
	l := &Loader{Kinds: kinds}
	load := func() *Config {
		t.Helper()
		cfg, err := l.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	c1 := load()
	if n := svc.Builds.Load(); n != 2 {
		t.Fatalf("51 entries naming 2 sources built them %d times", n)
	}
	c2 := load()
	for id, e := range c1.Entries {
		if c2.Entries[id] != e {
			t.Fatalf("%s decoded again though nothing changed", id)
		}
	}
	if n := svc.Builds.Load(); n != 2 {
		t.Fatalf("unchanged sources built again: %d", n)
	}

	// An in-place rewrite of the same size, at once: the stamp may not
	// tell, the bytes do.
	writeFiles(t, dir, map[string]string{"b.yaml": "namespace: b\nentries:\n  - {name: y, kind: test.svc, size: 2}\n"})
	c3 := load()
	if c3.Entries["b:y"] == c2.Entries["b:y"] || c3.Entries["b:y"].Spec.(*kindtest.SvcSpec).Size != 2 {
		t.Fatal("a rewritten file was not read again")
	}
	if c3.Entries["a:x"] != c2.Entries["a:x"] || c3.Entries["m:e7"] != c2.Entries["m:e7"] {
		t.Fatal("unchanged files decoded again")
	}

	writeFiles(t, dir, map[string]string{"lua/shared.lua": "return 3"})
	c4 := load()
	if c4.Entries["m:e7"] == c3.Entries["m:e7"] || c4.Entries["m:e7"].Digest == c3.Entries["m:e7"].Digest {
		t.Fatal("entries of a changed source kept their old decoding")
	}
	if c4.Entries["a:x"] != c3.Entries["a:x"] || c4.Entries["b:y"] != c3.Entries["b:y"] {
		t.Fatal("entries that do not read the changed source decoded again")
	}
	if n := svc.Builds.Load(); n != 3 {
		t.Fatalf("a changed source built %d times in all, want 3", n)
	}
	if got := string(c4.Entries["m:e0"].Sources[0].Bytes); got != "return 3" {
		t.Fatalf("source bytes %q", got)
	}

	// A file that becomes invalid is reported, then reused once fixed.
	writeFiles(t, dir, map[string]string{"b.yaml": "namespace: b\nentries:\n  - {name: y, kind: test.svc, size: -1}\n"})
	if _, err := l.Load(dir); err == nil || !strings.Contains(err.Error(), "b:y: size: must not be negative") {
		t.Fatalf("got %v", err)
	}
	if _, err := l.Load(dir); err == nil {
		t.Fatal("an invalid file passed the second time")
	}
	os.Remove(filepath.Join(dir, "b.yaml"))
	if c := load(); len(c.Entries) != 51 || c.Entries["a:x"] != c4.Entries["a:x"] {
		t.Fatalf("after removing a file: %d entries", len(c.Entries))
	}
}
