package value

import (
	"reflect"
	"strings"
	"testing"
)

// recordOf is m as Fields, its maps as Fields too, at any depth.
func recordOf(m map[string]any) *Fields {
	var f Fields
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = recordOf(sub)
		}
		f = append(f, Field{Key: k, Value: v})
	}
	return &f
}

// TestRecordIsItsMap: a Record is the same Value as the map[string]any of
// its fields for everything that reads values: Copy gives that map, its
// wire form decodes to it, and its JSON form and routing key are the map's.
func TestRecordIsItsMap(t *testing.T) {
	m := map[string]any{
		"method": "POST", "path": "/users/7", "key": "7",
		"params":  map[string]any{"id": "7"},
		"query":   map[string]any{},
		"headers": map[string]any{"host": "example.com", "x-a": "1, 2"},
		"list":    []any{1.0, "two", map[string]any{"three": 3.0}},
	}
	r := recordOf(m)
	got, err := Copy(r)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("Copy: %#v, %v; want %#v", got, err, m)
	}
	b, err := Encode(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	dec, rest, err := Decode(b)
	if err != nil || len(rest) != 0 || !reflect.DeepEqual(dec, m) {
		t.Fatalf("Decode(Encode): %#v, %v", dec, err)
	}
	mb, _ := Encode(nil, m)
	if len(mb) != len(b) {
		t.Errorf("wire form: %d bytes, the map's %d", len(b), len(mb))
	}
	jr, err := JSONForm(r)
	jm, _ := JSONForm(m)
	if err != nil || !reflect.DeepEqual(jr, jm) {
		t.Errorf("JSONForm: %#v, %v; want %#v", jr, err, jm)
	}
	if k, ok := Key(r); !ok || k != "7" {
		t.Errorf("Key: %q, %v", k, ok)
	}
	if _, ok := Key(recordOf(map[string]any{"a": "b"})); ok {
		t.Error("Key of a record without a key field: ok")
	}
	// What is refused in a map is refused in a record, at the same place.
	bad := recordOf(map[string]any{"h": map[string]any{"f": func() {}}})
	if _, err := Copy(bad); err == nil || !strings.Contains(err.Error(), "value.h.f") {
		t.Errorf("Copy of a function: %v", err)
	}
	if _, err := Encode(nil, bad); err == nil || !strings.Contains(err.Error(), "h.f") {
		t.Errorf("Encode of a function: %v", err)
	}
}
