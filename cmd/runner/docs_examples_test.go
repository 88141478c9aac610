package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every example configuration under docs/kinds validates as it is shipped:
// a newcomer's first command is `runner validate` on one of them.
func TestKindExamplesValidate(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../docs/kinds/*.example.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		rel, _ := filepath.Rel("../..", f)
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := start(t, "validate", rel)
			if code := r.wait(t); code != 0 {
				t.Fatalf("runner validate %s: exit %d\n%s", rel, code, r.logs())
			}
		})
	}
}

// docs/kinds/supervisor.md's complete example runs as the page says, and
// the page shows the scripts as they are.
func TestSupervisorCompleteExample(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/kinds/supervisor.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"supervisor.shard.lua", "supervisor.main.lua"} {
		src, err := os.ReadFile(filepath.Join("../../docs/kinds", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), string(src)) {
			t.Errorf("docs/kinds/supervisor.md does not show %s as it is", f)
		}
	}
	r := start(t, "run", "--no-watch", "--main", "app:sup_demo", "docs/kinds/supervisor.example.yaml")
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, r.logs())
	}
	out := r.stdout.String()
	for _, want := range []string{"core restarted cache", "customer-7 lives on <", "sessions: 1 active of 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}
