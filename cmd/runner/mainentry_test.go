package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/registry"
)

func TestResolveMain(t *testing.T) {
	cfg := &config.Config{Entries: map[registry.ID]*registry.Entry{
		"app:main": {}, "app:hello": {}, "tools:hello": {}, "tools:migrate": {},
	}}
	for _, tc := range []struct{ ref, id, err string }{
		{"app:main", "app:main", ""},
		{"main", "app:main", ""},         // one namespace has it
		{"migrate", "tools:migrate", ""}, // whichever namespace
		{"hello", "", `"hello" is an entry in several namespaces: app:hello, tools:hello; name one`},
		{"app:mian", "", `no such entry (did you mean "app:main"?)`},
		{"mian", "", `no such entry (did you mean "app:main"?)`},
		{"tools:migrat", "", `no such entry (did you mean "tools:migrate"?)`},
		{"nothing", "", "no such entry"},
	} {
		id, err := resolveMain(cfg, tc.ref)
		switch {
		case tc.err == "" && (err != nil || string(id) != tc.id):
			t.Errorf("%s: %q, %v; want %s", tc.ref, id, err, tc.id)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%s: %v; want %q", tc.ref, err, tc.err)
		}
	}
}

// Counts agree with their nouns: "1 error", "1 file".
func TestValidateCountsAreGrammatical(t *testing.T) {
	var out, errb bytes.Buffer
	if code := cli([]string{"validate", "testdata/bad/nons.yaml"}, &out, &errb, nil, nil); code != 1 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if lines := strings.Split(strings.TrimSpace(errb.String()), "\n"); lines[len(lines)-1] != "1 error" {
		t.Fatalf("last line %q", lines[len(lines)-1])
	}
	out.Reset()
	if code := cli([]string{"validate", "testdata/one"}, &out, &errb, nil, nil); code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if got := strings.TrimSpace(out.String()); got != "ok: 1 entry in 1 file" {
		t.Fatalf("stdout %q", got)
	}
}
