package value

import "testing"

// benchValue is a message of ordinary size: a request with a few fields
// and a short list.
var benchValue = map[string]any{
	"id": 12345.0, "user": "alice", "ok": true,
	"items": []any{
		map[string]any{"sku": "a-1", "qty": 2.0, "price": 9.5},
		map[string]any{"sku": "b-22", "qty": 1.0, "price": 120.0},
		map[string]any{"sku": "c-333", "qty": 7.0, "price": 0.25},
	},
	"tags": []any{"x", "y", "z"},
}

// BenchmarkEncode encodes an ordinary message into a reused buffer.
func BenchmarkEncode(b *testing.B) {
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = Encode(buf[:0], benchValue); err != nil {
			b.Fatal(err)
		}
	}
}
