package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/registry"
)

// envLoader loads files written to a temporary directory with the given
// environment.
type envLoader struct {
	t   *testing.T
	dir string
	env []string
	l   *Loader
}

func newEnvLoader(t *testing.T, env ...string) *envLoader {
	k, _ := kindtest.Kinds()
	k.Register(kindtest.ArgsKind{})
	el := &envLoader{t: t, dir: t.TempDir(), env: env}
	el.l = &Loader{Kinds: k, Environ: func() []string { return el.env }}
	return el
}

func (el *envLoader) load(body string) (*Config, error) {
	el.t.Helper()
	p := filepath.Join(el.dir, "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		el.t.Fatal(err)
	}
	return el.l.Load(p)
}

func TestEnvSubstitution(t *testing.T) {
	el := newEnvLoader(t, "POOL_SIZE=7", "AUTO=true", "WAIT=250ms", "HOST=db.internal", "PORT=5432", "TRICK=${env:HOST}", "EMPTY=")
	cfg, err := el.load(`namespace: app
entries:
  - name: a
    kind: test.svc
    size: ${env:POOL_SIZE:-4}
    timeout: ${env:WAIT}
    strategy: ${env:STRATEGY:-random}
    lifecycle:
      auto_start: ${env:AUTO}
      stop_timeout: ${env:STOP:-2s}
  - name: b
    kind: test.svc
    size: ${env:NOT_SET:-3}
    meta:
      dsn: "${env:HOST}"
      also: ${env:NOT_SET_EITHER}
  - name: c
    kind: test.args
    args:
      - "${env:HOST}:${env:PORT}"
      - "$${env:HOST}"
      - "${env:TRICK}"
      - ${env:PORT}
      - "${env:PORT}"
      - ${env:EMPTY}
      - !!int "${env:PORT}"
`)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Entries["app:a"]
	s := a.Spec.(*kindtest.SvcSpec)
	if s.Size != 7 || s.Timeout != 250*time.Millisecond || s.Strategy != "random" {
		t.Fatalf("a: %+v", s)
	}
	if !a.Lifecycle.AutoStart || a.Lifecycle.StopTimeout != 2*time.Second {
		t.Fatalf("a lifecycle %+v", a.Lifecycle)
	}
	b := cfg.Entries["app:b"]
	if b.Spec.(*kindtest.SvcSpec).Size != 3 {
		t.Fatalf("default not used: %+v", b.Spec)
	}
	// meta is kept as written: never substituted, so never a secret in /v1.
	if b.Meta["dsn"] != "${env:HOST}" || b.Meta["also"] != "${env:NOT_SET_EITHER}" {
		t.Fatalf("meta %v", b.Meta)
	}
	args := cfg.Entries["app:c"].Spec.([]any)
	want := []any{"db.internal:5432", "${env:HOST}", "${env:HOST}", float64(5432), "5432", nil, float64(5432)}
	if len(args) != len(want) {
		t.Fatalf("args %#v", args)
	}
	for i := range want {
		if args[i] != want[i] {
			t.Fatalf("args[%d] = %#v, want %#v (all %#v)", i, args[i], want[i], args)
		}
	}
	// An unchanged value gives an unchanged digest; another value another.
	cfg2, err := el.load(strings.Replace(mustRead(t, filepath.Join(el.dir, "c.yaml")), "namespace: app", "namespace: app # touched", 1))
	if err != nil {
		t.Fatal(err)
	}
	if cfg2.Entries["app:a"].Digest != a.Digest {
		t.Fatal("digest changed without a change")
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every problem is a validation error at the scalar's position, and no
// value read from the environment appears in an error message.
func TestEnvErrors(t *testing.T) {
	el := newEnvLoader(t, "SECRET=hunter2-is-secret", "SHORT=pw1", "BIG=5000", "NS=app", "PEER=app:a", "OK=1")
	_, err := el.load(`namespace: app
entries:
  - name: a
    kind: test.svc
    size: ${env:MISSING}
  - name: b
    kind: test.svc
    size: ${env:SECRET}
    strategy: ${env:SHORT}
  - name: c
    kind: test.svc
    size: ${env:BIG}
    timeout: "x${env:SECRET}"
  - name: d
    kind: test.svc
    size: ${env:bad-name}
    strategy: ${env:OK
  - name: ${env:NS}
    kind: test.svc
  - name: e
    kind: test.svc
    peer: ${env:PEER}
    lifecycle:
      depends_on: ["${env:PEER}"]
      start_timeout: ${env:OK}
  - name: f
    kind: ${env:KIND}
`)
	if err == nil {
		t.Fatal("loaded")
	}
	got := err.Error()
	want := []string{
		`c.yaml:5:11: app:a: size: environment variable MISSING is not set and has no default (${env:MISSING:-VALUE} gives one)`,
		`c.yaml:8:11: app:b: size: must be an integer, got "${env:SECRET}"`,
		`c.yaml:9:15: app:b: strategy: unknown value "${env:SHORT}"`,
		`c.yaml:12:11: app:c: size: must be at most 100 (limit test.svc.size), got ${env:BIG}`,
		`c.yaml:13:14: app:c: timeout: must be a duration such as 250ms or 5s, got "x${env:SECRET}"`,
		`c.yaml:16:11: app:d: size: malformed reference ${env:bad-name}`,
		`c.yaml:17:15: app:d: strategy: malformed reference "${env:OK": no closing }`,
		`c.yaml:18:11: app:${env:NS}: name: cannot come from the environment`,
		`c.yaml:22:11: app:e: peer: an entry ID cannot come from the environment`,
		`c.yaml:24:20: app:e: lifecycle.depends_on[0]: an entry ID cannot come from the environment`,
		`c.yaml:25:22: app:e: lifecycle.start_timeout: must be a duration such as 250ms or 5s, got "${env:OK}"`,
		`c.yaml:27:11: app:f: kind: cannot come from the environment`,
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
	// The file's path is the test's temporary directory, whose random
	// name may hold any digits ("…2215500004…" holds 5000): look past it.
	shown := strings.ReplaceAll(got, el.dir, "")
	for _, secret := range []string{"hunter2", "pw1", "5000"} {
		if strings.Contains(shown, secret) {
			t.Errorf("the value %q leaked into:\n%s", secret, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != len(want) {
		t.Errorf("%d errors, want %d (one per mistake):\n%s", n, len(want), got)
	}
}

// A quoted reference stays a string, as any quoted scalar does (a
// password 0123 must not become 83); in flow style, where braces must be
// quoted, a tag says what it is.
func TestEnvQuotedIsString(t *testing.T) {
	el := newEnvLoader(t, "N=4")
	_, err := el.load("namespace: app\nentries:\n  - {name: a, kind: test.svc, size: \"${env:N}\"}\n")
	if err == nil || !strings.Contains(err.Error(), `app:a: size: must be an integer, got "${env:N}"`) {
		t.Fatalf("%v", err)
	}
	cfg, err := el.load("namespace: app\nentries:\n  - {name: a, kind: test.svc, size: !!int \"${env:N}\"}\n")
	if err != nil || cfg.Entries["app:a"].Spec.(*kindtest.SvcSpec).Size != 4 {
		t.Fatalf("tagged: %v", err)
	}
}

// An anchor with a reference is substituted once for every alias of it,
// and a value taken from the environment is never expanded again.
func TestEnvThroughAliases(t *testing.T) {
	el := newEnvLoader(t, "N=5")
	cfg, err := el.load(`namespace: app
entries:
  - &base
    name: a
    kind: test.svc
    size: ${env:N}
  - {<<: *base, name: b}
  - {<<: *base, name: c}
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []registry.ID{"app:a", "app:b", "app:c"} {
		if n := cfg.Entries[id].Spec.(*kindtest.SvcSpec).Size; n != 5 {
			t.Fatalf("%s size %d", id, n)
		}
	}
	_, err = el.load(`namespace: app
entries:
  - &base
    name: a
    kind: test.svc
    size: ${env:MISSING}
  - {<<: *base, name: b}
`)
	if err == nil || strings.Count(err.Error(), "MISSING is not set") != 1 {
		t.Fatalf("one error at the anchor, not one per alias: %v", err)
	}
}

// A reload reads the environment again only after ReadEnvironment (SIGHUP):
// until then an unchanged file is reused as it was decoded; after it, a
// file whose variables changed is decoded again, even though its text did
// not change, and one whose variables did not is reused.
func TestEnvReadOnlyOnRequest(t *testing.T) {
	el := newEnvLoader(t, "N=2")
	body := "namespace: app\nentries:\n  - name: a\n    kind: test.svc\n    size: ${env:N}\n"
	other := filepath.Join(el.dir, "d.yaml")
	if err := os.WriteFile(other, []byte("namespace: other\nentries:\n  - name: b\n    kind: test.svc\n    size: ${env:M:-1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func() *Config {
		t.Helper()
		if err := os.WriteFile(filepath.Join(el.dir, "c.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := el.l.Load(el.dir)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	first := load()
	el.env = []string{"N=3"}
	second := load()
	if second.Entries["app:a"].Spec.(*kindtest.SvcSpec).Size != 2 || second.Entries["app:a"] != first.Entries["app:a"] {
		t.Fatal("the environment was read again without ReadEnvironment")
	}
	el.l.ReadEnvironment()
	third := load()
	a := third.Entries["app:a"]
	if a.Spec.(*kindtest.SvcSpec).Size != 3 || a.Digest == first.Entries["app:a"].Digest {
		t.Fatalf("after ReadEnvironment: size %d", a.Spec.(*kindtest.SvcSpec).Size)
	}
	if third.Entries["other:b"] != first.Entries["other:b"] {
		t.Fatal("a file whose variables did not change was decoded again")
	}
}

func TestRedact(t *testing.T) {
	el := newEnvLoader(t, "PASSWORD=correct-horse", "USER=bob", "PORT=5432", "FLAG=true")
	cfg, err := el.load(`namespace: app
entries:
  - name: c
    kind: test.args
    args:
      - "postgres://${env:USER}:${env:PASSWORD}@h:${env:PORT}"
      - "${env:FLAG}"
`)
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Entries["app:c"]
	got := e.Redact("connect postgres://bob:correct-horse@h:5432 failed for bob; bobby tried 5432 times, true")
	want := "connect postgres://${env:USER}:${env:PASSWORD}@h:5432 failed for ${env:USER}; bobby tried 5432 times, true"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if !e.Secret() || cfg.Entries["app:c"] == nil {
		t.Fatal("no secret recorded")
	}
	var nilEntry *registry.Entry
	if nilEntry.Redact("x") != "x" {
		t.Fatal("nil entry")
	}
}
