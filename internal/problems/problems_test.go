package problems

import (
	"errors"
	"testing"
)

func TestList(t *testing.T) {
	errSpec := errors.New("invalid spec")
	errChild := errors.New("invalid child")
	l := New(errSpec)
	if l.Err() != nil || l.Len() != 0 {
		t.Fatalf("empty list: %v", l.Err())
	}
	l.Errorf("size", "must be >= %d, got %d", 1, 0)
	if err := l.Err(); err.Error() != "invalid spec: size: must be >= 1, got 0" || !errors.Is(err, errSpec) {
		t.Fatalf("one problem: %v", err)
	}
	c := l.Sub("children[1].", errChild)
	c.Errorf("id", "is required")
	c.Errorf("", "is not a mapping")
	l.Sub("resizer.", nil).Errorf("upper_bound", "must be >= lower_bound, got %d < %d", 2, 5)
	err := l.Err()
	want := "invalid spec: size: must be >= 1, got 0; invalid child: children[1].id: is required; " +
		"invalid child: children[1]: is not a mapping; invalid spec: resizer.upper_bound: must be >= lower_bound, got 2 < 5"
	if err.Error() != want {
		t.Fatalf("got  %s\nwant %s", err, want)
	}
	if !errors.Is(err, errSpec) || !errors.Is(err, errChild) || l.Len() != 4 {
		t.Fatalf("%v does not match both sentinels", err)
	}
	// A child's problem is the spec's too: it matches both sentinels.
	one := New(errSpec)
	one.Sub("children[0].", errChild).Errorf("id", "is required")
	if err := one.Err(); !errors.Is(err, errSpec) || !errors.Is(err, errChild) || err.Error() != "invalid child: children[0].id: is required" {
		t.Fatalf("child problem: %v", err)
	}
	// The same problem twice is kept once.
	one.Sub("children[0].", errChild).Errorf("id", "is required")
	if one.Len() != 1 {
		t.Fatalf("%d problems", one.Len())
	}
	plain := New(nil)
	plain.Errorf("routee", "required")
	if plain.Err().Error() != "routee: required" {
		t.Fatalf("no sentinel: %v", plain.Err())
	}
}

// To hands problems on as they come, for a decoder to place.
func TestTo(t *testing.T) {
	var got []string
	r := reporterFunc(func(field, format string, args ...any) { got = append(got, field+"|"+format) })
	l := To(r)
	l.Errorf("size", "must be >= %d", 1)
	l.Errorf("size", "must be >= %d", 1)
	if len(got) != 2 || got[0] != "size|must be >= %d" || l.Len() != 0 || l.Err() != nil {
		t.Fatalf("forwarded %v, kept %d", got, l.Len())
	}
}

type reporterFunc func(field, format string, args ...any)

func (f reporterFunc) Errorf(field, format string, args ...any) { f(field, format, args...) }

// A List that finds nothing allocates nothing.
func TestValidListAllocatesNothing(t *testing.T) {
	sentinel := errors.New("bad")
	n := testing.AllocsPerRun(100, func() {
		l := New(sentinel)
		check(l, 3)
		if l.Err() != nil {
			t.Fatal(l.Err())
		}
	})
	if n != 0 {
		t.Fatalf("%v allocs", n)
	}
}

func check(l *List, size int) {
	if size < 1 {
		l.Errorf("size", "must be >= 1, got %d", size)
	}
}
