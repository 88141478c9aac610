package value

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// An error's cause and details cross a process (Copy) and a node (the
// codec) with it, and a wrapped error keeps what it wraps reachable.
func TestErrorCauseAndDetailsSurvive(t *testing.T) {
	root := NewError(KindNotFound, "no room lobby")
	wrapped := Wrap(root, "join", map[string]any{"room": "lobby", "tries": 3.0})
	if wrapped.Kind != KindNotFound || wrapped.Message != "join: no room lobby" || wrapped.Cause != root {
		t.Fatalf("Wrap = %+v", wrapped)
	}
	outer := Wrap(wrapped, "handle", nil)
	for _, v := range []any{outer, map[string]any{"err": outer}, Aggregate("all 1 routees failed", []*Error{outer})} {
		c, err := Copy(v)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Encode(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		got, rest, err := Decode(b)
		if err != nil || len(rest) != 0 {
			t.Fatalf("decode: %v (%d left)", err, len(rest))
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("wire %#v, copy %#v", got, c)
		}
	}
	c, _ := Copy(outer)
	ce := c.(*Error)
	if ce.Cause == wrapped || ce.Cause.Cause == root {
		t.Fatal("Copy shares the cause chain")
	}
	if r := ce.Root(); r.Message != "no room lobby" || r.Kind != KindNotFound {
		t.Fatalf("Root = %+v", r)
	}
	if d := ce.Cause.Details.(map[string]any); d["room"] != "lobby" || d["tries"] != 3.0 {
		t.Fatalf("details = %#v", d)
	}
	// FromError keeps them through a Go wrapper.
	if fe := FromError(fmt.Errorf("ctx: %w", outer)); fe.Cause != wrapped || fe.Message != "ctx: handle: join: no room lobby" {
		t.Fatalf("FromError = %+v", fe)
	}
	// A cause is not the error's identity: errors.Is does not follow it.
	if errors.Is(Wrap(testCauseSentinel, "ask", nil), testCauseSentinel) {
		t.Fatal("errors.Is followed a cause")
	}
}

// An error without cause or details keeps the short wire form older nodes
// sent; the long form with neither decodes as the short one.
func TestErrorWireFormCompatible(t *testing.T) {
	e := NewError(KindTimeout, "ask timed out")
	b, _ := Encode(nil, e)
	if b[0] != tagError {
		t.Fatalf("tag %d", b[0])
	}
	long := []byte{tagErrorX}
	long = append(long, b[1:]...)
	long = append(long, tagNil, tagNil)
	got, rest, err := Decode(long)
	if err != nil || len(rest) != 0 || !reflect.DeepEqual(got, e) {
		t.Fatalf("decode long form: %#v, %v", got, err)
	}
	w, _ := Encode(nil, Wrap(e, "x", nil))
	if w[0] != tagErrorX || bytes.Equal(w, b) {
		t.Fatalf("wrapped error tag %d", w[0])
	}
	// A cause that is not an error is malformed, not a panic.
	bad := append([]byte{tagErrorX}, b[1:]...)
	bad = append(bad, tagString, 1, 'x', tagNil)
	if _, _, err := Decode(bad); KindOf(err) != KindInvalid {
		t.Fatalf("a string cause decoded: %v", err)
	}
	// Details that cannot cross are refused where the error is encoded.
	if _, err := Encode(nil, &Error{Kind: KindInvalid, Message: "m", Details: func() {}}); KindOf(err) != KindInvalid {
		t.Fatalf("encode func details: %v", err)
	}
}

// TestWrapIsBounded: wrapping in a loop grew the message without bound
// (past the per-string limit) and the chain past what the wire carries.
// The message is cut at MaxMessageSize, the chain at MaxCauseDepth with
// its root kept, and the result still crosses a node.
func TestWrapIsBounded(t *testing.T) {
	root := NewError(KindNotFound, "no room lobby")
	e := root
	ctx := string(bytes.Repeat([]byte("é"), 1000)) // two bytes a rune
	for i := 0; i < 10_000; i++ {
		e = Wrap(e, ctx, nil)
		if len(e.Message) > MaxMessageSize {
			t.Fatalf("wrap %d: message of %d bytes", i, len(e.Message))
		}
	}
	if !utf8.ValidString(e.Message) || !strings.HasSuffix(e.Message, " bytes cut)") {
		t.Fatalf("message ends %q", e.Message[len(e.Message)-40:])
	}
	depth := 0
	for c := e; c != nil; c = c.Cause {
		depth++
	}
	if depth != MaxCauseDepth {
		t.Fatalf("chain of %d, want %d", depth, MaxCauseDepth)
	}
	if e.Root() != root || e.Kind != KindNotFound {
		t.Fatalf("root %+v, kind %s", e.Root(), e.Kind)
	}
	b, err := Encode(nil, e)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Decode(b); err != nil {
		t.Fatal(err)
	}
	// a huge context alone is cut too
	if w := Wrap(root, strings.Repeat("x", 10<<20), nil); len(w.Message) > MaxMessageSize || w.Cause != root {
		t.Fatalf("message of %d bytes", len(w.Message))
	}
	// short chains are untouched
	if w := Wrap(Wrap(root, "a", nil), "b", nil); w.Message != "b: a: no room lobby" || w.Cause.Cause != root {
		t.Fatalf("Wrap = %+v", w)
	}
}

// testCauseSentinel is registered once: a code can be taken only once.
var testCauseSentinel = Sentinel("value.test_cause", KindStopped, "shutdown")
