package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/registry"
)

func loadT(t testing.TB, paths ...string) (*Config, error) {
	t.Helper()
	k, _ := kindtest.Kinds()
	return (&Loader{Kinds: k}).Load(paths...)
}

func TestLoadGood(t *testing.T) {
	cfg, err := loadT(t, "testdata/good")
	if err != nil {
		t.Fatal(err)
	}
	wantOrder := []registry.ID{"app:db", "app:def", "app:api", "other:worker"}
	if fmt.Sprint(cfg.Order) != fmt.Sprint(wantOrder) {
		t.Fatalf("order %v, want %v", cfg.Order, wantOrder)
	}
	api := cfg.Entries["app:api"]
	if api.Kind != "test.svc" || !api.Lifecycle.AutoStart {
		t.Fatalf("api: %+v", api)
	}
	want := registry.RestartPolicy{Type: registry.RestartPermanent, InitialDelay: 10 * time.Millisecond, MaxDelay: time.Second, BackoffFactor: 3, MaxAttempts: 4}
	if api.Lifecycle.Restart != want {
		t.Fatalf("restart %+v, want %+v", api.Lifecycle.Restart, want)
	}
	spec := api.Spec.(*kindtest.SvcSpec)
	if spec.Peer != "app:db" || spec.Routee != "app:def" {
		t.Fatalf("refs not qualified: %+v", spec)
	}
	if got := fmt.Sprint(cfg.Deps["app:api"]); got != "[app:db app:def]" {
		t.Fatalf("deps %s", got)
	}
	if def := cfg.Entries["app:def"]; def.Meta["comment"] != "a definition" || def.Lifecycle.Restart != registry.DefaultRestartPolicy {
		t.Fatalf("def: %+v", def)
	}
	db := cfg.Entries["app:db"]
	if len(db.Sources) != 1 || !filepath.IsAbs(db.Sources[0].Path) || !strings.Contains(string(db.Sources[0].Bytes), "main") {
		t.Fatalf("sources %+v", db.Sources)
	}
	if w := cfg.Entries["other:worker"]; fmt.Sprint(w.Lifecycle.DependsOn) != "[app:api]" {
		t.Fatalf("worker depends_on %v", w.Lifecycle.DependsOn)
	}
	if len(cfg.Files) != 2 || len(cfg.Dirs) != 1 {
		t.Fatalf("files %v dirs %v", cfg.Files, cfg.Dirs)
	}
	if got := cfg.Sources(); len(got) != 1 || filepath.Base(got[0]) != "db.lua" {
		t.Fatalf("Sources() = %v", got)
	}
}

// TestLoadBad loads a directory holding every mistake the loader must
// report and checks each is reported, with its position, in one pass.
func TestLoadBad(t *testing.T) {
	_, err := loadT(t, "testdata/bad", "testdata/bad/nocfg")
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("want Errors, got %T %v", err, err)
	}
	want := strings.Split(strings.TrimSpace(`
testdata/bad/cycle.yaml:6:20: cyc:a: lifecycle.depends_on[0]: dependency cycle: cyc:a -> cyc:b -> cyc:c -> cyc:a
testdata/bad/dup1.yaml:3:5: app:svc: name: duplicate entry ID app:svc: also declared at testdata/bad/dup2.yaml:3:5
testdata/bad/dup2.yaml:3:5: app:svc: name: duplicate entry ID app:svc: also declared at testdata/bad/dup1.yaml:3:5
testdata/bad/empty.yaml:1:1: empty file: want a mapping with namespace and entries
testdata/bad/entrynotmap.yaml:3:5: entries[0]: an entry must be a mapping, not the scalar "just a string"
testdata/bad/invalid.yaml:5:11: inv:v: size: must not be negative, got -1
testdata/bad/invalid.yaml:6:14: inv:v: timeout: must be positive
testdata/bad/invalid.yaml:7:15: inv:v: strategy: unknown value "round_robbin" (did you mean "round_robin"?); one of round_robin, random, broadcast
testdata/bad/invalid.yaml:10:25: inv:v: lifecycle.restart.backoff_factor: must be between 1 and 100, got 0.5
testdata/bad/invalid.yaml:11:23: inv:v: lifecycle.restart.max_attempts: must be 0 (unlimited) or more, got -2
testdata/bad/list.yaml:1:1: the file must be a mapping with namespace and entries, not a list
testdata/bad/lua.yaml:5:13: lua:w: source: source missing.lua: no such file or directory
testdata/bad/nocfg: directory holds no configuration (*.yaml or *.yml files)
testdata/bad/nons.yaml:1:1: namespace: required: every file names its namespace
testdata/bad/notyaml.yaml:1:1: not valid YAML: did not find expected ',' or ']'
testdata/bad/refs.yaml:5:11: refs:user: peer: references app:missing, which is not declared
testdata/bad/refs.yaml:6:13: refs:user: routee: references app:svc, a test.svc; must be test.def
testdata/bad/unknown.yaml:4:11: unk:a: kind: unknown kind "test.svx" (did you mean "test.svc"?); known kinds: test.def, test.svc, test.upd
testdata/bad/unknown.yaml:8:5: unk:b: sise: unknown field (did you mean "size"?)
testdata/bad/unknown.yaml:10:7: unk:b: lifecycle.auto_strat: unknown field (did you mean "auto_start"?)
testdata/bad/unreadable.yaml: cannot read: no such file or directory`), "\n")
	got := strings.Split(es.Error(), "\n")
	if len(got) != len(want) {
		t.Errorf("got %d errors, want %d:\n%s", len(got), len(want), es.Error())
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("error %d:\n got  %s\n want %s", i, got[i], want[i])
		}
	}
}

// TestLoadMistakes checks one mistake at a time, each in its own file.
func TestLoadMistakes(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"whitespace only", "  \n\n", "c.yaml:1:1: empty file"},
		{"comment only", "# nothing\n", "c.yaml:1:1: empty file"},
		{"scalar", "hello\n", `c.yaml:1:1: the file must be a mapping with namespace and entries, not the scalar "hello"`},
		// a 4 MiB Lua file given as the config is one scalar: quoted in part
		{"long scalar", strings.Repeat("do ", 1<<20) + "\n", `c.yaml:1:1: the file must be a mapping with namespace and entries, not the scalar "do do do`},
		{"bad namespace", "namespace: App\n", `c.yaml:1:12: namespace: invalid namespace "App"`},
		{"entries not a list", "namespace: a\nentries: {x: 1}\n", "c.yaml:2:10: entries: must be a list of entries"},
		{"unknown top field", "namespace: a\nentrie: []\n", `c.yaml:2:1: entrie: unknown field (did you mean "entries"?)`},
		{"bad version", "version: \"2\"\nnamespace: a\n", `c.yaml:1:10: version: unsupported version "2"`},
		{"name not a string", "namespace: a\nentries:\n  - {name: [x], kind: test.def}\n", "c.yaml:3:12: a:entries[0]: name: must be a string"},
		{"empty name", "namespace: a\nentries:\n  - {name: \"\", kind: test.def}\n", "c.yaml:3:12: a:entries[0]: name: required"},
		{"missing name", "namespace: a\nentries:\n  - kind: test.def\n", "c.yaml:3:5: a:entries[0]: name: required"},
		{"bad name", "namespace: a\nentries:\n  - {name: X, kind: test.def}\n", `c.yaml:3:12: a:X: name: invalid name "X"`},
		{"missing kind", "namespace: a\nentries:\n  - name: x\n", "c.yaml:3:5: a:x: kind: required; one of test.def, test.svc, test.upd"},
		{"meta not a mapping", "namespace: a\nentries:\n  - {name: x, kind: test.def, meta: 3}\n", "c.yaml:3:37: a:x: meta: must be a mapping"},
		{"lifecycle not a mapping", "namespace: a\nentries:\n  - {name: x, kind: test.def, lifecycle: 3}\n", "c.yaml:3:42: a:x: lifecycle: must be a mapping"},
		{"auto_start on a definition", "namespace: a\nentries:\n  - {name: x, kind: test.def, lifecycle: {auto_start: true}}\n", "a:x: lifecycle.auto_start: kind test.def does not run as a service"},
		{"auto_start not a bool", "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {auto_start: maybe}}\n", `a:x: lifecycle.auto_start: must be true or false, got "maybe"`},
		{"depends_on itself", "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {depends_on: [x]}}\n", "a:x: lifecycle.depends_on[0]: an entry cannot depend on itself"},
		{"depends_on missing", "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {depends_on: [a:y]}}\n", "a:x: lifecycle.depends_on[0]: references a:y, which is not declared"},
		{"depends_on not an ID", "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {depends_on: [\"A:b c\"]}}\n", `a:x: lifecycle.depends_on[0]: "A:b c" is not an entry ID`},
		{"bad duration", "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {restart: {initial_delay: soon}}}\n", `a:x: lifecycle.restart.initial_delay: must be a duration such as 250ms or 5s, got "soon"`},
		{"max below initial", "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {restart: {initial_delay: 2s, max_delay: 1s}}}\n", "a:x: lifecycle.restart.max_delay: must not be below initial_delay (2s)"},
		{"duplicate field", "namespace: a\nentries:\n  - name: x\n    kind: test.svc\n    size: 1\n    size: 2\n", "c.yaml:6:5: a:x: size: field written twice"},
		{"duplicate in one file", "namespace: a\nentries:\n  - {name: x, kind: test.def}\n  - {name: x, kind: test.def}\n", "c.yaml:4:5: a:x: name: duplicate entry ID a:x: also declared at c.yaml:3:5"},
		{"self reference cycle through peer", "namespace: a\nentries:\n  - {name: x, kind: test.svc, peer: y}\n  - {name: y, kind: test.svc, peer: x}\n", "c.yaml:3:37: a:x: peer: dependency cycle: a:x -> a:y -> a:x"},
		{"int not int", "namespace: a\nentries:\n  - {name: x, kind: test.svc, size: \"3\"}\n", `a:x: size: must be an integer, got "3"`},
		{"bad source scheme", "namespace: a\nentries:\n  - {name: x, kind: test.svc, source: x.lua}\n", `a:x: source: must be file://PATH, got "x.lua"`},
		{"billion laughs", "namespace: a\nx: &a [1,1,1,1,1,1,1,1,1,1]\ny: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nz: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nw: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\nv: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nu: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\nt: [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n", "aliases expand the configuration by more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "c.yaml")
			if err := os.WriteFile(p, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			wd, _ := os.Getwd()
			if err := os.Chdir(dir); err != nil {
				t.Fatal(err)
			}
			defer os.Chdir(wd)
			_, err := loadT(t, "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "c.yaml") {
				t.Fatalf("error does not name the file first: %v", err)
			}
			if n := len(err.Error()); n > maxFailMsg+100 {
				t.Fatalf("an error of %d bytes: %.300s", n, err)
			}
		})
	}
}

// A name or kind of the wrong type is one error each, and it names the
// entry (by its place while the name is unknown).
func TestLoadNameNotString(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("namespace: a\nentries:\n  - {name: {x: 1}, kind: test.def}\n  - {name: y, kind: [test.def]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := loadT(t, p)
	var es Errors
	if !errors.As(err, &es) || len(es) != 2 ||
		es[0].Entry != "a:entries[0]" || es[0].Field != "name" || es[1].Entry != "a:y" || es[1].Field != "kind" {
		t.Fatalf("got %v", err)
	}
}

func TestLoadPaths(t *testing.T) {
	dir := t.TempDir()
	if _, err := loadT(t); err == nil || !strings.Contains(err.Error(), "no configuration paths given") {
		t.Fatalf("no paths: %v", err)
	}
	missing := filepath.Join(dir, "nope.yaml")
	if _, err := loadT(t, missing); err == nil || !strings.Contains(err.Error(), missing+": cannot read: no such file or directory") {
		t.Fatalf("missing: %v", err)
	}
	// Dot-files (editor backups, swap files) are never configuration.
	os.WriteFile(filepath.Join(dir, ".x.yaml.swp.yaml"), []byte("garbage: ["), 0o644)
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "c.yaml"), []byte("garbage: ["), 0o644)
	os.WriteFile(filepath.Join(dir, "a.yml"), []byte("namespace: a\nentries: [{name: x, kind: test.def}]\n"), 0o644)
	cfg, err := loadT(t, dir, filepath.Join(dir, "a.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Files) != 1 || len(cfg.Entries) != 1 {
		t.Fatalf("files %v entries %v", cfg.Files, cfg.Entries)
	}
	if os.Geteuid() != 0 {
		p := filepath.Join(dir, "locked.yaml")
		os.WriteFile(p, []byte("namespace: b\n"), 0o000)
		if _, err := loadT(t, p); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Fatalf("unreadable: %v", err)
		}
	}
}

func TestDigest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	digestOf := func() string {
		cfg, err := loadT(t, filepath.Join(dir, "c.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Entries["a:x"].Digest
	}
	write("w.lua", "return 1")
	write("c.yaml", "namespace: a\nentries:\n  - name: x\n    kind: test.svc\n    size: 2\n    source: file://w.lua\n")
	base := digestOf()
	write("c.yaml", "# moved around, commented, meta added\nnamespace: a\nentries:\n\n  - {source: \"file://w.lua\", kind: test.svc, meta: {note: hi}, name: x, size: 2}\n")
	if d := digestOf(); d != base {
		t.Fatalf("digest changed with layout only: %s vs %s", d, base)
	}
	write("c.yaml", "namespace: a\nentries:\n  - name: x\n    kind: test.svc\n    size: 3\n    source: file://w.lua\n")
	if d := digestOf(); d == base {
		t.Fatal("digest did not change with a field")
	}
	write("c.yaml", "namespace: a\nentries:\n  - name: x\n    kind: test.svc\n    size: 2\n    source: file://w.lua\n")
	write("w.lua", "return 2")
	if d := digestOf(); d == base {
		t.Fatal("digest did not change with the source's bytes")
	}
}

// FuzzLoad feeds arbitrary bytes to the loader: it must never panic, and
// every error must name its file.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"testdata/good", "testdata/good/sub", "testdata/bad"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && IsConfigName(e.Name()) {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("namespace: a\nentries:\n  - &x {name: x, kind: test.svc}\n  - *x\n"))
	f.Add([]byte("namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {depends_on: x}}\n"))
	f.Add([]byte("---\n---\nnamespace: a\n"))
	f.Add([]byte("namespace: a\nentries:\n  - {name: x, kind: test.svc, meta: &m {a: *m}}\n"))
	k, _ := kindtest.Kinds()
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "f.yaml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := (&Loader{Kinds: k}).Load(p)
		if err == nil {
			if cfg == nil || len(cfg.Order) != len(cfg.Entries) {
				t.Fatalf("valid config with a broken order: %+v", cfg)
			}
			return
		}
		var es Errors
		if !errors.As(err, &es) || len(es) == 0 {
			t.Fatalf("want Errors, got %T %v", err, err)
		}
		for _, e := range es {
			if e.Pos.File != p {
				t.Fatalf("error without its file: %v", e)
			}
		}
	})
}

// BenchmarkLoad1000 loads and validates a 1,000-entry configuration.
func BenchmarkLoad1000(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	sb.WriteString("namespace: bench\nentries:\n")
	for i := range 1000 {
		fmt.Fprintf(&sb, "  - name: e%d\n    kind: test.svc\n    size: %d\n    timeout: 250ms\n    strategy: random\n", i, i%7)
		if i > 0 {
			fmt.Fprintf(&sb, "    peer: e%d\n", i-1)
		}
		fmt.Fprintf(&sb, "    lifecycle:\n      auto_start: %v\n      restart: {initial_delay: 50ms, max_attempts: 3}\n", i%2 == 0)
	}
	p := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	k, _ := kindtest.Kinds()
	l := &Loader{Kinds: k}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		cfg, err := l.Load(p)
		if err != nil || len(cfg.Order) != 1000 {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/load")
}

// A field reports its first mistake only: a value of the wrong type is not
// also reported out of range by a check that read the default in its place
// (`size: five` said "must be an integer" and "must be >= 1, got 0").
func TestFieldReportsOneMistake(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("{size: five, count: -1, other: x}"), &doc); err != nil {
		t.Fatal(err)
	}
	var errs []error
	d := registry.NewDecoder(&registry.Entry{ID: "a:p"}, "c.yaml", doc.Content[0], &errs, nil)
	if n := d.Int("size", 0); n < 1 {
		d.Errorf("size", "must be >= 1, got %d", n)
	}
	if n := d.Int("count", 0); n < 0 {
		d.Errorf("count", "must be 0 or more, got %d", n)
		d.Errorf("count", "a second complaint about the same value")
	}
	d.Errorf("", "about the entry as a whole")
	d.Errorf("", "and another")
	if len(errs) != 4 || !strings.Contains(errs[0].Error(), `size: must be an integer, got "five"`) ||
		!strings.Contains(errs[1].Error(), "count: must be 0 or more, got -1") {
		t.Fatalf("got %v", errs)
	}
}

// An invalid namespace does not hide the file's other mistakes: its
// entries are still checked, against one another too, under the namespace
// as written. (Fixing the namespace used to reveal the rest.)
func TestLoadInvalidNamespaceReportsEverything(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	src := "namespace: App\nentries:\n  - {name: svc, kind: test.svc}\n  - {name: user, kind: test.svc, peer: scv, sise: 1, lifecycle: {depends_on: [svc]}}\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := loadT(t, p)
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("want Errors, got %v", err)
	}
	for _, want := range []string{
		`namespace: invalid namespace "App"`,
		`App:user: peer: references App:scv, which is not declared (did you mean "App:svc"?)`,
		`App:user: sise: unknown field (did you mean "size"?)`,
	} {
		if !strings.Contains(es.Error(), want) {
			t.Errorf("no error %q in\n%s", want, es.Error())
		}
	}
	if strings.Contains(es.Error(), "is not an entry ID") {
		t.Errorf("a bare depends_on is blamed for the namespace:\n%s", es.Error())
	}
}
