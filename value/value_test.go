package value

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestCopyNormalisesAndCopies(t *testing.T) {
	in := map[string]any{
		"n":   3,
		"f":   float32(1.5),
		"arr": []any{int64(1), "two", true, nil},
		"mix": map[any]any{"k": uint8(2), 1.0: "one"},
		"err": Aggregate("all 2 routees failed", []*Error{NewError(KindTimeout, "t"), NewError(KindInvalid, "i")}),
	}
	out, err := Copy(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"n":   3.0,
		"f":   1.5,
		"arr": []any{1.0, "two", true, nil},
		"mix": map[any]any{"k": 2.0, 1.0: "one"},
		"err": Aggregate("all 2 routees failed", []*Error{NewError(KindTimeout, "t"), NewError(KindInvalid, "i")}),
	}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("got %#v", out)
	}
	in["arr"].([]any)[1] = "changed"
	if out.(map[string]any)["arr"].([]any)[1] != "two" {
		t.Fatal("copy shares storage with the original")
	}
}

func TestCopyRejects(t *testing.T) {
	cyc := map[string]any{}
	cyc["self"] = cyc
	deep := any("leaf")
	for i := 0; i < MaxDepth+2; i++ {
		deep = []any{deep}
	}
	shared := []any{1}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"function", map[string]any{"f": func() {}}, "value.f: a func() cannot cross"},
		{"channel", []any{make(chan int)}, "value[1]: a chan int cannot cross"},
		{"cycle", cyc, "cycle"},
		{"too deep", deep, "nested deeper than"},
		{"bad key", map[any]any{[2]int{}: 1}, "cannot be a table key"},
		{"struct", struct{}{}, "cannot cross"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Copy(tt.v)
			if KindOf(err) != KindInvalid || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v; want invalid containing %q", err, tt.want)
			}
		})
	}
	// The same table twice (not a cycle) is fine.
	if _, err := Copy([]any{shared, shared}); err != nil {
		t.Fatalf("shared subtable: %v", err)
	}
}

func TestErrorKinds(t *testing.T) {
	sentinel := NewError(KindTimeout, "ask timed out")
	wrapped := fmt.Errorf("pool app:p: %w", sentinel)
	if KindOf(wrapped) != KindTimeout || !errors.Is(wrapped, sentinel) {
		t.Fatal("wrapping lost the kind")
	}
	copied, _ := Copy(sentinel)
	if !errors.Is(copied.(*Error), sentinel) {
		t.Fatal("a copied sentinel no longer matches")
	}
	if KindOf(errors.New("plain")) != KindInternal || KindOf(nil) != "" {
		t.Fatal("KindOf of plain errors")
	}
	fe := FromError(wrapped)
	if fe.Kind != KindTimeout || fe.Message != "pool app:p: ask timed out" {
		t.Fatalf("FromError = %+v", fe)
	}
	agg := Aggregate("none of 2 routees replied within 10ms", []*Error{sentinel, sentinel})
	if agg.String() != "none of 2 routees replied within 10ms: [ask timed out; ask timed out]" || agg.Error() != "none of 2 routees replied within 10ms" {
		t.Fatalf("aggregate renders %q / %q", agg.String(), agg.Error())
	}
	if empty := Aggregate("no routees left to scatter to", nil); empty.Errors == nil || len(empty.Errors) != 0 {
		t.Fatal("an empty aggregate must hold an empty list")
	}
}
