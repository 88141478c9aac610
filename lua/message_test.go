package lua

import (
	"testing"
	"unsafe"
)

// A received tell and its handle are one allocation of at most 128 bytes:
// the 128-byte size class, where 136 bytes (with an ask's reply state)
// took 144. Only an ask carries that state.
func TestTellMessageSizeClass(t *testing.T) {
	if s := unsafe.Sizeof(luaMessage{}); s > 128 {
		t.Fatalf("luaMessage is %d bytes, over the 128-byte size class", s)
	}
}
