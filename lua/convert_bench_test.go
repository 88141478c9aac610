package lua

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/value"
)

// requestRecord is a record shaped as an HTTP request's payload: seven
// fields with boxed keys, two of them records (one field of a Fields, none
// of another), one a boxed record of five strings.
func requestRecord() value.BoxedRecord {
	headers := boxedFields{recordFields{{"user-agent", "bench"}, {"content-length", "64"},
		{"content-type", "text/plain"}, {"accept-encoding", "gzip"}, {"host", "127.0.0.1:8090"}}}
	return boxedFields{recordFields{{"method", "POST"}, {"path", "/echo"},
		{"params", &value.Fields{{Key: "what", Value: "echo"}}}, {"query", &value.Fields{}},
		{"headers", headers}, {"body", strings.Repeat("0123456789abcdef", 4)}, {"remote", "127.0.0.1:40000"}}}
}

// BenchmarkToLuaRecord: a request-shaped record (requestRecord) made into
// the Lua tables a script reads, as msg:payload() does.
func BenchmarkToLuaRecord(b *testing.B) {
	L := lua.NewState()
	defer L.Close()
	r := requestRecord()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToLua(L, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToGoRecordReply: a handler's reply table copied out of Lua for
// an asker that takes Records, as msg:reply does for an HTTP route.
func BenchmarkToGoRecordReply(b *testing.B) {
	L := lua.NewState()
	defer L.Close()
	if err := L.DoString(`v = {status = 200, headers = {["x-echo"] = "yes"}, body = string.rep("x", 64)}`); err != nil {
		b.Fatal(err)
	}
	lv := L.GetGlobal("v")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToGoRecordAt(lv, "reply"); err != nil {
			b.Fatal(err)
		}
	}
}
