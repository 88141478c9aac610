package value

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestCodecRoundTrip(t *testing.T) {
	tests := []any{
		nil, true, false, 0.0, -1.5, 42, "", "héllo\x00",
		[]any{}, []any{1.0, "x", nil, []any{true}},
		map[string]any{}, map[string]any{"a": 1.0, "b": map[string]any{"c": "d"}},
		map[any]any{"k": 1.0, 2.0: "two", true: false},
		NewError(KindTimeout, "ask timed out"),
		Aggregate("none of 3 routees replied within 250ms", []*Error{
			NewError(KindTimeout, "t1"), NewError(KindTimeout, "t2"), NewError(KindTimeout, "t3"),
		}),
		Aggregate("no routees left to scatter to", nil),
		map[string]any{"err": Aggregate("all 2 routees failed", []*Error{NewError(KindInvalid, "bad"), Aggregate("nested", nil)})},
	}
	for _, v := range tests {
		b, err := Encode(nil, v)
		if err != nil {
			t.Fatalf("encode %#v: %v", v, err)
		}
		got, rest, err := Decode(b)
		if err != nil || len(rest) != 0 {
			t.Fatalf("decode %#v: %v (rest %d)", v, err, len(rest))
		}
		want, _ := Copy(v)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip %#v = %#v", want, got)
		}
	}
}

func TestCodecRejects(t *testing.T) {
	if _, err := Encode(nil, map[string]any{"f": func() {}}); KindOf(err) != KindInvalid {
		t.Fatalf("encode func: %v", err)
	}
	good, _ := Encode(nil, map[string]any{"a": []any{1.0, "xyz"}})
	for i := 0; i < len(good); i++ {
		if _, _, err := Decode(good[:i]); KindOf(err) != KindInvalid {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
	for _, b := range [][]byte{{99}, {tagArray, 0xff, 0xff, 0xff, 0xff, 0x0f}, {tagMixMap, 1, tagArray, 0, tagNil}} {
		if _, _, err := Decode(b); KindOf(err) != KindInvalid {
			t.Fatalf("decode %v: %v", b, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, v := range []any{nil, 1.0, "s", []any{1.0}, map[string]any{"a": true}, Aggregate("x", []*Error{NewError(KindLimit, "y")}), Wrap(NewError(KindNotFound, "z"), "w", map[string]any{"k": 1.0})} {
		b, _ := Encode(nil, v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes must encode again and decode to the same value.
		b2, err := Encode(nil, v)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", v, err)
		}
		v2, _, err := Decode(b2)
		if err != nil || !sameValue(v, v2) {
			t.Fatalf("second round trip: %#v vs %#v (%v)", v, v2, err)
		}
	})
}

// sameValue is reflect.DeepEqual, except that NaN equals NaN (a NaN
// payload must survive the wire as a NaN).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (x != x && y != y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !sameValue(v, y[k]) {
				return false
			}
		}
		return true
	case map[any]any:
		y, ok := b.(map[any]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !sameValue(v, y[k]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// Encoding with a budget stops at the limit: a long string is refused
// before it is copied, and a table shared at every level (which expands
// to 2^40 strings) fails at the limit instead of expanding.
func TestEncodeLimit(t *testing.T) {
	shared := any("0123456789abcdef")
	for range 40 {
		shared = []any{shared, shared}
	}
	const limit = 1 << 20
	tests := []struct {
		name string
		v    any
		ok   bool
	}{
		{"small", map[string]any{"a": 1.0, "b": "x"}, true},
		{"just fits", string(make([]byte, limit-16)), true},
		{"long string", string(make([]byte, 64<<20)), false},
		{"long key", map[string]any{string(make([]byte, 2*limit)): true}, false},
		{"shared table", shared, false},
		{"many elements", make([]any, 2*limit), false},
		{"error message", &Error{Kind: KindInternal, Message: string(make([]byte, 2*limit))}, false},
		{"error details", &Error{Kind: KindInternal, Details: shared}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			prefix := []byte("head")
			b, err := EncodeLimit(prefix, tt.v, limit)
			runtime.ReadMemStats(&after)
			if tt.ok {
				if err != nil || len(b) > limit {
					t.Fatalf("encode: %d bytes, %v", len(b), err)
				}
				return
			}
			if !errors.Is(err, ErrTooLarge) || KindOf(err) != KindLimit {
				t.Fatalf("err = %v, want ErrTooLarge of kind limit", err)
			}
			if string(b) != "head" {
				t.Fatalf("buf after a failure = %q", b)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 8*limit {
				t.Fatalf("a refused encode allocated %d bytes (limit %d)", got, limit)
			}
		})
	}
	if _, err := Encode(nil, string(make([]byte, 2*limit))); err != nil {
		t.Fatalf("Encode has no limit: %v", err)
	}
}

// Errors still name where in the value the offending part is.
func TestEncodePaths(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{map[string]any{"a": []any{1.0, map[string]any{"f": func() {}}}}, "value.a[2].f: a func() cannot cross"},
		{map[any]any{1.0: map[any]any{true: make(chan int)}}, "value[1][true]: a chan int cannot cross"},
		{&Error{Kind: KindInternal, Cause: &Error{Kind: KindInternal, Details: []any{func() {}}}}, "value.cause.details[1]: a func() cannot cross"},
	}
	for _, tt := range tests {
		_, err := Encode(nil, tt.v)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Encode(%#v) = %v, want %q", tt.v, err, tt.want)
		}
	}
}
