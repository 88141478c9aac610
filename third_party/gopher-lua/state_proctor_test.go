package lua

import (
	"strings"
	"testing"
	"time"
)

// Tests of Proctor's limits in the VM (see PATCHES.md).

func TestMaxStringSizeConcat(t *testing.T) {
	L := NewState(Options{MaxStringSize: 1000})
	defer L.Close()
	for _, tc := range []struct {
		src, err string
	}{
		{`local s = string.rep("x", 500) s = s .. s`, ""},
		{`local s = string.rep("x", 500) s = s .. s .. "!"`, "string too long: .. would make 1001 bytes, over the limit of 1000"},
		{`local s = string.rep("x", 600) local t = s .. 1 .. s`, "over the limit"},
		// coroutines inherit the limit
		{`local s = string.rep("x", 600) local ok, err = coroutine.resume(coroutine.create(function() return s .. s end)) assert(not ok) error(err)`, "over the limit"},
	} {
		err := L.DoString(tc.src)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.src, err, tc.err)
		}
	}
}

func TestMaxTableEntries(t *testing.T) {
	L := NewState(Options{MaxTableEntries: 100})
	defer L.Close()
	for _, tc := range []struct {
		src, err string
	}{
		{`local t = {} for i = 1, 100 do t[i] = i end for i = 1, 100 do t[i] = -i end t[100] = nil t[100] = 1`, ""},
		{`local t = {} for i = 1, 101 do t[i] = i end`, "table overflow: a table may hold at most 100 entries"},
		{`local t = {} for i = 1, 101 do t["k" .. i] = i end`, "table overflow"},
		{`local t = {} for i = 1, 101 do t[i + 0.5] = i end`, "table overflow"},
		{`local t = {} for i = 1, 101 do rawset(t, i, i) end`, "table overflow"},
		{`local t = {} for i = 1, 100 do t.x = i end`, ""},
		{`t = {} for i = 1, 101 do t[i] = i end`, "table overflow"},
		// the globals table is a table too
		{`for i = 1, 101 do _G["g" .. i] = i end`, "table overflow"},
	} {
		err := L.DoString(tc.src)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.src, err, tc.err)
		}
	}
}

// TestRegistryGrowsGeometrically: pushing many values costs amortised
// constant time per value, so hitting RegistryMaxSize is quick.
func TestRegistryGrowsGeometrically(t *testing.T) {
	L := NewState(Options{RegistrySize: 128, RegistryMaxSize: 1 << 20, RegistryGrowStep: 32})
	defer L.Close()
	start := time.Now()
	err := L.DoString(`return select("#", unpack({}, 1, 1e8))`)
	if err == nil || !strings.Contains(err.Error(), "registry overflow") {
		t.Fatalf("err = %v", err)
	}
	// A fixed step of 32 copied the stack 32768 times on the way to
	// a million slots (minutes); geometric growth takes milliseconds.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}
