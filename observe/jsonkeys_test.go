package observe

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/value"
)

// jsonSize never says a value is smaller than its JSON, so a reply it
// lets through fits the bound, and it stops counting past the bound.
func TestJSONSize(t *testing.T) {
	for _, v := range []any{
		nil, true, 1.5, -1e300, math.SmallestNonzeroFloat64, "", "plain", "quotes \" and \\ and \n\t\x01", "ünïcode",
		[]any{1.0, "a", nil, []any{}}, map[string]any{"a": 1.0, "b": []any{"x"}},
		map[any]any{1.0: "one", true: "yes", "k": map[any]any{}},
		&value.Error{Kind: value.KindInvalid, Message: "bad", Details: map[string]any{"f": "x"}, Cause: &value.Error{Kind: value.KindTimeout, Message: "late"}},
	} {
		form, err := value.JSONForm(v)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(form)
		if n, ok := jsonSize(v, 1<<20); !ok || n < len(b) {
			t.Errorf("%#v: size %d (%v), its JSON has %d bytes", v, n, ok, len(b))
		}
	}
	// What encoding/json would change is refused before it is measured.
	if _, err := value.JSONForm([]any{"\xff\xfe invalid"}); err == nil {
		t.Fatal("a string that is not UTF-8 has a JSON form")
	}
	big := []any{strings.Repeat("x", 1000), strings.Repeat("y", 1000)}
	if n, ok := jsonSize(big, 1500); ok || n > 1500+1010 {
		t.Fatalf("past the bound: %d %v", n, ok)
	}
}
