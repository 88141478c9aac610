package lua

import (
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
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

// BenchmarkLuaServeRecord: a Lua process's turn for an HTTP-style ask from
// Go, 64 in flight: receive, the request-shaped payload into Lua, a reply
// table copied out as Records (the asker takes them), the reply settled.
func BenchmarkLuaServeRecord(b *testing.B) {
	h := newHarness(b)
	srv := h.Entry("srv", `
return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    msg:reply({status = 200, headers = {["x-echo"] = "yes"}, body = msg:payload().body})
  end
end }`)
	pid := h.Spawn(srv)
	defer func() { _ = h.Node.Terminate(pid) }()
	r := requestRecord()
	const inFlight = 64
	calls := make(chan process.Call, inFlight)
	ask := func() {
		c := process.NewCall()
		c.AcceptRecord()
		if err := h.Node.Send(pid, c.MessageWithin(process.Message{Topic: "request", Payload: r}, 10*time.Second)); err != nil {
			b.Fatal(err)
		}
		calls <- c
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := b.N
	for i := 0; i < min(n, inFlight); i++ {
		ask()
	}
	for i := 0; i < n; i++ {
		c := <-calls
		rep, err := c.Wait(10*time.Second, nil)
		if err != nil || rep.Err != nil {
			b.Fatal(err, rep.Err)
		}
		if i+inFlight < n {
			ask()
		}
	}
}
