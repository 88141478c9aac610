package value

import (
	"math"
	"testing"
)

// Every Go number is a key, rendered by value, so a Go embedder's int32
// and a Lua number reach the same routee or worker.
func TestKey(t *testing.T) {
	for _, tc := range []struct {
		payload any
		want    string
		ok      bool
	}{
		{"user-42", "user-42", true},
		{42.0, "42", true},
		{42.5, "42.5", true},
		{int(42), "42", true},
		{int8(42), "42", true},
		{int16(42), "42", true},
		{int32(42), "42", true},
		{int64(-42), "-42", true},
		{uint(42), "42", true},
		{uint8(42), "42", true},
		{uint16(42), "42", true},
		{uint32(42), "42", true},
		{uint64(18446744073709551615), "18446744073709551615", true},
		{float32(42), "42", true},
		{float32(0.5), "0.5", true},
		{map[string]any{"key": int32(7)}, "7", true},
		{map[any]any{"key": "k"}, "k", true},
		{map[string]any{"n": 1.0}, "", false},
		{true, "", false},
		{nil, "", false},
		{math.NaN(), "", false},
	} {
		got, ok := Key(tc.payload)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Key(%T %v) = %q, %v; want %q, %v", tc.payload, tc.payload, got, ok, tc.want, tc.ok)
		}
	}
}

func TestHashIsStable(t *testing.T) {
	// Every node must route a key alike: the hash is fixed, not seeded.
	// Pinned values: every node must route a key alike, so the function may
	// not change (a change would move every key of every partition and ring).
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"", 17665956581633026203},
		{"user-42", 8797103408588478355},
		{"7", 8857979822077535623},
	} {
		if got := Hash(tc.in); got != tc.want {
			t.Errorf("Hash(%q) = %d; want %d", tc.in, got, tc.want)
		}
	}
}
