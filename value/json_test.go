package value

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestJSONForm(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"scalars", []any{nil, true, 1.5, "s"}, `[null,true,1.5,"s"]`},
		{"integers normalised", map[string]any{"n": 3}, `{"n":3}`},
		{"mixed keys", map[any]any{1.0: "a", "k": true, false: 2.0}, `{"1":"a","false":2,"k":true}`},
		{"error value", &Error{Kind: KindAggregate, Message: "all failed", Errors: []*Error{{Kind: KindTimeout, Message: "t"}}},
			`{"errors":[{"kind":"timeout","message":"t"}],"kind":"aggregate","message":"all failed"}`},
		{"wrapped error", Wrap(NewError(KindNotFound, "no room"), "join", map[string]any{"room": "lobby"}),
			`{"cause":{"kind":"not_found","message":"no room"},"details":{"room":"lobby"},"kind":"not_found","message":"join: no room"}`},
		{"nested", map[string]any{"a": []any{map[any]any{2.0: nil}}}, `{"a":[{"2":null}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := JSONForm(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(v)
			if err != nil || string(b) != tt.want {
				t.Fatalf("got %s, %v; want %s", b, err, tt.want)
			}
		})
	}
	in := map[any]any{1.0: "x"}
	JSONForm(in)
	if _, ok := in[1.0]; !ok {
		t.Fatal("JSONForm modified its input")
	}
}

func TestJSONFormRejects(t *testing.T) {
	deep := any("leaf")
	for i := 0; i < MaxDepth+2; i++ {
		deep = []any{deep}
	}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"NaN", map[string]any{"x": math.NaN()}, "value.x: NaN has no JSON form"},
		{"infinity", []any{math.Inf(1)}, "value[1]: +Inf has no JSON form"},
		{"colliding keys", map[any]any{1.0: "a", "1": "b"}, `two keys become the object key "1"`},
		{"function", func() {}, "cannot cross a process boundary"},
		{"too deep", deep, "nested deeper than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := JSONForm(tt.in)
			if err == nil || KindOf(err) != KindInvalid || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v; want invalid %q", err, tt.want)
			}
		})
	}
}
