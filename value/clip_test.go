package value

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

func TestClip(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short", "hello", 10, "hello"},
		{"at the bound", "hello", 5, "hello"},
		{"ascii", strings.Repeat("a", 100), 40, strings.Repeat("a", 14) + "... (86 of 100 bytes cut)"},
		// "é" is two bytes: the cut never splits it.
		{"utf-8", strings.Repeat("é", 50), 40, strings.Repeat("é", 7) + "... (86 of 100 bytes cut)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Clip(tt.s, tt.n)
			if got != tt.want {
				t.Fatalf("Clip = %q, want %q", got, tt.want)
			}
			if len(got) > tt.n || !utf8.ValidString(got) {
				t.Fatalf("Clip = %d bytes (valid %v), want at most %d", len(got), utf8.ValidString(got), tt.n)
			}
		})
	}
}

// A clipped string is a copy: keeping it must not keep the large one
// alive, which a substring would.
func TestClipCopies(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	got := Clip(big, 100)
	if unsafe.StringData(got) == unsafe.StringData(big) {
		t.Fatal("Clip returned a substring of its input")
	}
}

// ClipError bounds an error's text at MaxShownError, saying the total.
func TestClipError(t *testing.T) {
	huge := &Error{Kind: KindInternal, Message: strings.Repeat("E", 60<<20)}
	for _, err := range []error{huge, fmt.Errorf("context: %w", huge), errors.New(strings.Repeat("E", 1<<20))} {
		got := ClipError(err)
		if len(got) > MaxShownError || !strings.HasSuffix(got, " bytes cut)") || !strings.Contains(got, fmt.Sprintf(" of %d bytes", len(err.Error()))) {
			t.Fatalf("ClipError: %d bytes, ends %q", len(got), got[max(len(got)-60, 0):])
		}
	}
	if got := ClipError(NewError(KindLimit, "small")); got != "small" {
		t.Fatalf("ClipError = %q", got)
	}
	if ClipError(nil) != "" {
		t.Fatal("ClipError(nil) is not empty")
	}
}
