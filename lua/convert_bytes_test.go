package lua

import (
	"math"
	"reflect"
	"runtime"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/value"
)

// TestToGoRecordAtBytes: a reply's Records are sized for their fields:
// {status, headers = {one}, body} is 128 + 64 bytes in two allocations
// (320 when each Record had room for four), and Records of every size up
// to past eight hold what ToGoAt's maps do.
func TestToGoRecordAtBytes(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	if err := L.DoString(`v = {status = 200, headers = {["x-echo"] = "yes"}, body = "b"}`); err != nil {
		t.Fatal(err)
	}
	lv := L.GetGlobal("v")
	if a := testing.AllocsPerRun(100, func() { _, _ = ToGoRecordAt(lv, "reply") }); a > 2 {
		t.Errorf("%.0f allocations, want 2", a)
	}
	least := uint64(math.MaxUint64)
	var ms runtime.MemStats
	for range 3 {
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		for range 100 {
			_, _ = ToGoRecordAt(lv, "reply")
		}
		runtime.ReadMemStats(&ms)
		least = min(least, (ms.TotalAlloc-before)/100)
	}
	if least > 192 {
		t.Errorf("%d bytes, want at most 192", least)
	}
	for n := 0; n <= 11; n++ {
		tb := L.NewTable()
		for i := range n {
			tb.RawSetString(string(rune('a'+i)), lua.LNumber(i))
		}
		got, err := ToGoRecordAt(tb, "reply")
		if err != nil {
			t.Fatal(err)
		}
		r, ok := got.(value.Record)
		if !ok || r.Len() != n {
			t.Fatalf("%d fields: %T, want a Record of %d", n, got, n)
		}
		cp, _ := value.Copy(got)
		want, _ := ToGoAt(tb, "reply")
		if !reflect.DeepEqual(cp, want) {
			t.Errorf("%d fields: %v, want %v", n, cp, want)
		}
	}
}
