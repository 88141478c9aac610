package pm

import (
	"errors"
	"strings"
	"testing"
)

// Tests of Proctor's patch (see PATCHES.md): compiled patterns matched one
// position at a time, and a check that can interrupt the matcher.

func TestFindFrom(t *testing.T) {
	for _, tc := range []struct {
		pat, src   string
		offset     int
		start, end int // -1: no match
	}{
		{"b+", "aabbbc", 0, 2, 5},
		{"b+", "aabbbc", 4, 4, 5},
		{"^b", "aabbbc", 0, -1, -1},
		{"^b", "aabbbc", 2, 2, 3},
		{"(%w+)=", "x key=v", 0, 2, 6}, // no '=' after x; the capture is "key"
		{"%d", "abc", 0, -1, -1},
		{"", "abc", 1, 1, 1},
	} {
		p, err := Compile(tc.pat)
		if err != nil {
			t.Fatalf("%q: %v", tc.pat, err)
		}
		md, err := p.FindFrom([]byte(tc.src), tc.offset, nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.pat, err)
		}
		if tc.pat == "(%w+)=" && (md == nil || md.CaptureLength() != 4 || md.Capture(2) != 2 || md.Capture(3) != 5) {
			t.Fatalf("%q in %q: capture %+v", tc.pat, tc.src, md)
		}
		if tc.start < 0 {
			if md != nil {
				t.Fatalf("%q in %q from %d: want no match, got %d..%d", tc.pat, tc.src, tc.offset, md.Capture(0), md.Capture(1))
			}
			continue
		}
		if md == nil || md.Capture(0) != tc.start || md.Capture(1) != tc.end {
			t.Fatalf("%q in %q from %d: want %d..%d, got %+v", tc.pat, tc.src, tc.offset, tc.start, tc.end, md)
		}
	}
}

func TestCompileError(t *testing.T) {
	if _, err := Compile("[a"); err == nil {
		t.Fatal("unfinished class compiled")
	}
	if _, err := Compile("(a"); err == nil {
		t.Fatal("unclosed capture compiled")
	}
}

// TestFindFromCheck: the check ends a match that backtracks for ever, and
// is called often enough to stop it soon.
func TestFindFromCheck(t *testing.T) {
	p, err := Compile(".-.-.-.-.-.-b")
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	calls := 0
	md, err := p.FindFrom([]byte(strings.Repeat("a", 3000)), 0, func() error {
		calls++
		if calls == 100 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || md != nil {
		t.Fatalf("md=%v err=%v, want the check's error", md, err)
	}
	// The check runs on every position too: a search over many short
	// attempts is interrupted as well.
	p, _ = Compile("ab")
	calls = 0
	_, err = p.FindFrom([]byte(strings.Repeat("a", 1<<20)), 0, func() error { calls++; return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("a long scan was not interrupted: %v", err)
	}
}

// TestCaptureLimit: a pattern has at most MaxCaptures captures, as in C
// Lua; deeply nested '(' are refused with an error, not a Go stack
// overflow (a fatal error that took the whole process down).
func TestCaptureLimit(t *testing.T) {
	for _, tc := range []struct {
		pat string
		ok  bool
	}{
		{strings.Repeat("(a)", MaxCaptures), true},
		{strings.Repeat("()", MaxCaptures), true},
		{strings.Repeat("(", MaxCaptures) + strings.Repeat(")", MaxCaptures), true},
		{strings.Repeat("(a)", MaxCaptures+1), false},
		{strings.Repeat("()", MaxCaptures+1), false},
		{strings.Repeat("(", 20_000_000), false},
		{strings.Repeat("(", 1000) + strings.Repeat(")", 1000), false},
	} {
		_, err := Compile(tc.pat)
		name := tc.pat
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		if tc.ok {
			if err != nil {
				t.Errorf("%q: %v", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "too many captures") {
			t.Errorf("%q: got %v, want too many captures", name, err)
		}
		if _, err := Find(tc.pat, []byte("a"), 0, 1); err == nil || !strings.Contains(err.Error(), "too many captures") {
			t.Errorf("Find %q: got %v, want too many captures", name, err)
		}
	}
}
