package value

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// Registered once each: a code can be taken only once, and tests rerun.
var (
	errTestSentinel  = Sentinel("value_test.sentinel", KindLimit, "test sentinel")
	errOtherSentinel = Sentinel("value_test.other", KindLimit, "test sentinel")
)

// A sentinel keeps its identity through wrapping, FromError, Copy and the
// codec; the very sentinel comes back when it crossed unwrapped.
func TestSentinelSurvives(t *testing.T) {
	wrapped := fmt.Errorf("op: %w", errTestSentinel)
	conv := FromError(wrapped)
	if conv.Code != "value_test.sentinel" || conv.Message != "op: test sentinel" || !errors.Is(conv, errTestSentinel) {
		t.Fatalf("FromError = %#v", conv)
	}
	cp, _ := Copy(conv)
	if !errors.Is(cp.(*Error), errTestSentinel) {
		t.Fatalf("Copy lost the code: %#v", cp)
	}
	for _, v := range []any{conv, errTestSentinel, map[string]any{"e": conv}} {
		b, err := Encode(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Copy(v)
		if v == errTestSentinel {
			if got != errTestSentinel {
				t.Fatalf("decoded %#v, not the sentinel", got)
			}
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip %#v = %#v", want, got)
		}
	}
	// Another sentinel of the same kind does not match, nor does an error
	// with the same message but another code.
	other := errOtherSentinel
	if errors.Is(conv, other) || errors.Is(other, errTestSentinel) {
		t.Fatal("two codes match each other")
	}
	// An error without a code still matches by kind and message, as before.
	if !errors.Is(NewError(KindLimit, "test sentinel"), errTestSentinel) {
		t.Fatal("an uncoded copy no longer matches")
	}
}

func TestSentinelCodesAreUnique(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration of a code did not panic")
		}
	}()
	Sentinel("value_test.sentinel", KindInvalid, "again")
}

func TestLookupCode(t *testing.T) {
	if e, ok := LookupCode("value_test.sentinel"); !ok || e != errTestSentinel {
		t.Fatalf("lookup = %v %v", e, ok)
	}
	found := false
	for _, c := range Codes() {
		found = found || c == "value_test.sentinel"
	}
	if !found {
		t.Fatal("Codes misses a registered code")
	}
}
