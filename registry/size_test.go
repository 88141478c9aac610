package registry

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSizeField(t *testing.T) {
	f := SizeField("max_body", 1024, 1<<20, "A size.").AtLeast(0, "")
	cases := []struct {
		yaml string
		want int
		err  string
	}{
		{"", 1024, ""},
		{"max_body: 2048", 2048, ""},
		{"max_body: 64KiB", 64 << 10, ""},
		{"max_body: 1MiB", 1 << 20, ""},
		{"max_body: 1 KB", 1000, ""},
		{"max_body: 2MiB", 1 << 20, "must be at most 1048576 bytes (limit t.max_body), got 2MiB"},
		{"max_body: 99999999999999999999GiB", 1 << 20, "must be at most"},
		{"max_body: 1TB", 1024, `not a size: write bytes as an integer, or with a unit such as 64KiB, 1MiB or 1GB (B, KB, KiB, MB, MiB, GB, GiB; case-sensitive), got "1TB"`},
		{"max_body: 64kb", 1024, `got "64kb" (did you mean "64KB"?)`},
		{"max_body: 1 mib", 1024, `got "1 mib" (did you mean "1MiB"?)`},
		{"max_body: 1.5", 1024, `not a size`},
		{"max_body: [1]", 0, `must be an integer`},
		{"max_body: -1", 0, "must be 0 or more"},
	}
	for _, c := range cases {
		var node yaml.Node
		if err := yaml.Unmarshal([]byte("{"+c.yaml+"}"), &node); err != nil {
			t.Fatal(err)
		}
		var errs []error
		d := NewDecoder(&Entry{ID: "a:x", Kind: "t"}, "c.yaml", node.Content[0], &errs, nil)
		got := f.Size(d)
		switch {
		case c.err == "" && (len(errs) > 0 || got != c.want):
			t.Errorf("%s: %d %v, want %d", c.yaml, got, errs, c.want)
		case c.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), c.err)):
			t.Errorf("%s: %v, want %q", c.yaml, errs, c.err)
		case c.err != "" && c.want != 0 && got != c.want:
			t.Errorf("%s: %d, want %d", c.yaml, got, c.want)
		}
	}
	if err := checkFields([]*Field{f}); err != nil {
		t.Error(err)
	}
}
