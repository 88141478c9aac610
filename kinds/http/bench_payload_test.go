package http

import (
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"

	glua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/lua"
)

// BenchmarkPayloadToLua: the conversion half of a request in
// BenchmarkHTTPEcho, on one goroutine: the benchmark's request (net/http's
// client's five headers, one wildcard, 64 bytes of body) made into its
// payload and the payload into the Lua tables a script reads.
func BenchmarkPayloadToLua(b *testing.B) {
	r, body := echoRequest()
	L := glua.NewState()
	defer L.Close()
	b.ReportAllocs()
	for b.Loop() {
		p, err := RequestPayload(r, body, []string{"what"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := lua.ToLua(L, p); err != nil {
			b.Fatal(err)
		}
	}
}

// echoRequest is what net/http's server makes of BenchmarkHTTPEcho's
// request to its route (/{what...}), and its body.
func echoRequest() (*nethttp.Request, string) {
	r := httptest.NewRequest("POST", "/echo", nil)
	r.Header = nethttp.Header{"Content-Type": {"text/plain"}, "User-Agent": {"proctor-bench"},
		"Accept-Encoding": {"gzip"}, "Content-Length": {"64"}}
	r.Host, r.RemoteAddr = "127.0.0.1:8090", "127.0.0.1:40000"
	r.SetPathValue("what", "echo")
	return r, strings.Repeat("0123456789abcdef", 4)
}
