package registry

import (
	"testing"
)

func TestQualify(t *testing.T) {
	app := &Entry{ID: "app:main"}
	tests := []struct {
		from *Entry
		ref  string
		want ID
	}{
		{app, "pg", "app:pg"},
		{app, "other:pg", "other:pg"},
		{app, "", ""},
		{app, "<n1.4.1>", "<n1.4.1>"},
		{nil, "pg", "pg"},
	}
	for _, tt := range tests {
		if got := Qualify(tt.from, tt.ref); got != tt.want {
			t.Errorf("Qualify(%v, %q) = %q, want %q", tt.from, tt.ref, got, tt.want)
		}
	}
}
