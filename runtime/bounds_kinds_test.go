package runtime_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/config"
)

// boundsBase is a valid entry of each kind, to which one bounded field is
// added.
var boundsBase = map[string]string{
	"process.lua":           "kind: process.lua\n    source: file://w.lua\n",
	"router.pool":           "kind: router.pool\n    routee: w\n    size: 1\n",
	"pg.scope":              "kind: pg.scope\n",
	"supervisor":            "kind: supervisor\n",
	"supervisor.dynamic":    "kind: supervisor.dynamic\n",
	"supervisor.partition":  "kind: supervisor.partition\n    process: w\n",
	"router.group":          "kind: router.group\n    scope: pg\n    group: g\n",
	"http.server":           "kind: http.server\n    listen: 127.0.0.1:0\n",
	"http.route":            "kind: http.route\n    server: web\n    path: /x\n    to: w\n",
	"lifecycle.restart.max": "kind: pg.scope\n",
}

// Every bound every kind declares is enforced: the value at the bound
// validates, one past it is an error naming the limit; the issue's
// examples fail validate with their own messages.
func TestKindBounds(t *testing.T) {
	kinds := realKinds()
	bounds := kinds.Bounds()
	if len(bounds) < 15 {
		t.Fatalf("only %d bounds: %v", len(bounds), bounds)
	}
	load := func(t *testing.T, field string, value string, base string) error {
		t.Helper()
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "w.lua"), []byte("return {main = function() end}"), 0o644)
		yaml := "namespace: app\nentries:\n  - {name: w, kind: process.lua, source: \"file://w.lua\"}\n  - {name: pg, kind: pg.scope}\n  - {name: web, kind: http.server, listen: \"127.0.0.1:0\"}\n  - name: x\n    " + base
		path := strings.Split(field, ".")
		for i, p := range path[:len(path)-1] {
			yaml += "    " + strings.Repeat("  ", i) + p + ":\n"
			if p == "resizer" {
				typ := "default"
				if path[len(path)-1] == "optimization_range" {
					typ = "optimal_size_exploring"
				}
				yaml += "    " + strings.Repeat("  ", i+1) + "type: " + typ + "\n"
			}
		}
		yaml += "    " + strings.Repeat("  ", len(path)-1) + path[len(path)-1] + ": " + value + "\n"
		os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(yaml), 0o644)
		_, err := (&config.Loader{Kinds: kinds}).Load(dir)
		return err
	}
	for name, max := range bounds {
		if name == "processes" {
			continue // a bound on the whole configuration: TestLoadProcessCount
		}
		kind, field := "", name
		for _, k := range kinds.Names() {
			if f, ok := strings.CutPrefix(name, k+"."); ok && len(k) > len(kind) {
				kind, field = k, f
			}
		}
		base := boundsBase[kind]
		if field == "size" {
			base = strings.ReplaceAll(base, "    size: 1\n", "")
		}
		if kind == "" {
			base = boundsBase["lifecycle.restart.max"]
		}
		t.Run(name, func(t *testing.T) {
			if base == "" {
				t.Fatalf("no base entry for kind %q", kind)
			}
			// Fields that must be at least another take the bound too.
			if err := load(t, field, fmt.Sprint(max), base); err != nil && !strings.Contains(err.Error(), "must not exceed") && !strings.Contains(err.Error(), "must be >=") {
				t.Fatalf("at the bound: %v", err)
			}
			err := load(t, field, fmt.Sprint(max+1), base)
			want := fmt.Sprintf("app:x: %s: must be at most %d (limit %s), got %d", field, max, name, max+1)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("past the bound: got %v\nwant %q", err, want)
			}
		})
	}
	for _, tt := range []struct{ kind, field, value, want string }{
		{"supervisor.partition", "partitions", "100000000", "partitions: must be at most 1024 (limit supervisor.partition.partitions), got 100000000"},
		{"router.pool", "size", "100000000", "size: must be at most 1000 (limit router.pool.size), got 100000000"},
		{"process.lua", "mailbox_size", "9223372036854775807", "mailbox_size: must be at most 1000000 (limit process.lua.mailbox_size), got 9223372036854775807"},
	} {
		base := strings.ReplaceAll(boundsBase[tt.kind], "    size: 1\n", "")
		if err := load(t, tt.field, tt.value, base); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s: %s: got %v", tt.kind, tt.field, tt.value, err)
		}
	}
}

// The processes a configuration starts are bounded through nesting: each
// partitions count is within its bound, but partitions of partitions
// multiply. A million passes; a thousand times that is an error at the
// field that passes the bound, and so are too many processes in entries
// that start with the runtime together.
func TestLoadProcessCount(t *testing.T) {
	kinds := realKinds()
	load := func(t *testing.T, limits map[string]int, entries string) error {
		t.Helper()
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "w.lua"), []byte("return {main = function() end}"), 0o644)
		yaml := "namespace: app\nentries:\n  - {name: w, kind: process.lua, source: \"file://w.lua\"}\n" + entries
		os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(yaml), 0o644)
		_, err := (&config.Loader{Kinds: kinds, Limits: limits}).Load(dir)
		return err
	}
	const million = `  - {name: p1, kind: supervisor.partition, partitions: 1000, process: w}
  - {name: p2, kind: supervisor.partition, partitions: 999, process: p1}
`
	if err := load(t, nil, million+"  - {name: top, kind: supervisor, lifecycle: {auto_start: true}, children: [{id: a, process: p2}]}\n"); err != nil {
		t.Fatalf("a million processes: %v", err)
	}
	tests := []struct {
		name    string
		limits  map[string]int
		entries string
		want    []string
	}{
		{"partitions of partitions of partitions", nil, million + "  - {name: p3, kind: supervisor.partition, partitions: 1000, process: p2}\n",
			[]string{"c.yaml:6:71: app:p3: process: starts more than 2000000 processes with its nested children (1000 × app:p2, which starts 1000000)", "--limit processes=N"}},
		{"a supervisor's child", nil, million + "  - name: top\n    kind: supervisor\n    children:\n      - {id: a, process: p2}\n      - {id: b, process: p2}\n      - {id: c, process: p2}\n",
			[]string{"app:top: children[1].process: starts more than 2000000 processes"}},
		{"the limit overridden", map[string]int{"processes": 500}, "  - {name: p1, kind: supervisor.partition, partitions: 1000, process: w}\n",
			[]string{"app:p1: process: starts more than 500 processes with its nested children (1000 × app:w, which starts 1)"}},
		{"a pool's upper bound", map[string]int{"processes": 500}, "  - {name: pool, kind: router.pool, routee: w, size: 10, resizer: {upper_bound: 800}}\n",
			[]string{"app:pool: routee: starts more than 500 processes"}},
		{"entries that start with the runtime", nil, million +
			"  - {name: a, kind: supervisor, lifecycle: {auto_start: true}, children: [{id: a, process: p2}]}\n" +
			"  - {name: b, kind: supervisor, lifecycle: {auto_start: true}, children: [{id: a, process: p2}]}\n",
			[]string{"lifecycle.auto_start: the entries that start with the runtime start more than 2000000 processes together"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := load(t, tt.limits, tt.entries)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("got %v\nwant %q", err, w)
				}
			}
			if n := strings.Count(err.Error(), "processes with its nested"); n > 1 {
				t.Fatalf("reported %d times: %v", n, err)
			}
		})
	}
}
