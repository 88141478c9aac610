package http_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	rtrace "runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchClients is how many keep-alive clients a benchmark runs at once.
const benchClients = 64

var benchBody = []byte(strings.Repeat("0123456789abcdef", 4)) // 64 bytes

// BenchmarkHTTPEcho: benchClients keep-alive clients POST 64 bytes and
// read them back, through a route to a Lua process that echoes the body
// (lua), to a router.pool of 2 such routees (pool2), and, in the same
// run, from a plain net/http handler doing the same work (nethttp).
// Reported: req/s, the p50 and p99 latency of one request in µs, the
// CPU time the process spent per request (cpu-µs/req: clients, server
// and Lua together, user and system), which a busy machine disturbs
// less than the wall-clock figures, the collections per 1,000 requests
// (gc/kreq), the collector's CPU per request (gc-cpu-µs/req) and the p99
// of the scheduler's latencies (sched-p99-µs); see runtimeStats. The
// latencies are kept in a histogram of a fixed size (latencies), so the
// benchmark's own memory does not change with b.N.
//
// The clients are rawClient: one goroutine and one connection each,
// the request's bytes made once and the response read with a minimal
// HTTP/1.1 parser, as a load generator such as wrk does. They run in the
// benchmark's process, on the same cores as the server, so what they
// cost is counted in cpu-µs/req and taken from the server; net/http's
// client costs about as much CPU per request as the whole plain net/http
// server (BenchmarkHTTPEchoGoClient measures with it).
func BenchmarkHTTPEcho(b *testing.B) { benchEchoCases(b, rawEcho) }

// BenchmarkHTTPEchoGoClient is BenchmarkHTTPEcho with net/http's client
// (a Transport keeping benchClients connections), the client the first
// figures of issue 26 were taken with: its read and write loop
// goroutines per connection and its allocations (about 60 per request)
// run beside the server.
func BenchmarkHTTPEchoGoClient(b *testing.B) { benchEchoCases(b, goEcho) }

func benchEchoCases(b *testing.B, newClients func(b *testing.B, url string) []echoClient) {
	b.Run("nethttp", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			body, err := io.ReadAll(nethttp.MaxBytesReader(w, r.Body, 1024))
			if err != nil {
				w.WriteHeader(nethttp.StatusRequestEntityTooLarge)
				return
			}
			w.Header().Set("X-Echo", "yes")
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write(body)
		}), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		benchEcho(b, newClients, "http://"+ln.Addr().String()+"/echo")
	})
	b.Run("lua", func(b *testing.B) {
		n := startBench(b, benchBase)
		benchEcho(b, newClients, n.url("/echo"))
	})
	b.Run("pool2", func(b *testing.B) {
		n := startBench(b, benchBase+benchPool)
		benchEcho(b, newClients, n.url("/pool/echo"))
	})
}

// benchLua is the benchmark's handler: it does what the plain net/http
// handler does, the body back with an x-echo header (the tests'
// echo.lua looks at the path first, for its other cases).
const benchLua = `
return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    msg:reply({status = 200, headers = {["x-echo"] = "yes"}, body = msg:payload().body})
  end
end }
`

// startBench runs config with its Lua processes running benchLua.
func startBench(b testing.TB, config string) *node {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bench.lua"), []byte(benchLua), 0o644); err != nil {
		b.Fatal(err)
	}
	return startIn(b, dir, strings.ReplaceAll(config, "source: file://echo.lua", "source: file://bench.lua"))
}

// An echoClient POSTs benchBody and returns the response's status and
// body (read into buf, which it may grow).
type echoClient interface {
	echo(buf []byte) (status int, body []byte, err error)
	Close()
}

// rawEcho makes benchClients rawClients.
func rawEcho(b *testing.B, url string) []echoClient {
	cs := make([]echoClient, benchClients)
	for i := range cs {
		rc, err := newRawClient(url, benchBody)
		if err != nil {
			b.Fatal(err)
		}
		cs[i] = rc
	}
	return cs
}

// goEcho makes benchClients net/http clients sharing one Transport that
// keeps a connection for each.
func goEcho(b *testing.B, url string) []echoClient {
	tr := &nethttp.Transport{MaxIdleConnsPerHost: benchClients, MaxConnsPerHost: benchClients}
	cs := make([]echoClient, benchClients)
	for i := range cs {
		cs[i] = &goClient{url: url, c: &nethttp.Client{Transport: tr}, tr: tr}
	}
	return cs
}

type goClient struct {
	url string
	c   *nethttp.Client
	tr  *nethttp.Transport
}

func (g *goClient) echo(buf []byte) (int, []byte, error) {
	resp, err := g.c.Post(g.url, "text/plain", bytes.NewReader(benchBody))
	if err != nil {
		return 0, buf, err
	}
	out := bytes.NewBuffer(buf[:0])
	_, err = io.Copy(out, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, out.Bytes(), err
}

func (g *goClient) Close() { g.tr.CloseIdleConnections() }

func benchEcho(b *testing.B, newClients func(b *testing.B, url string) []echoClient, url string) {
	clients := newClients(b, url)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	var next atomic.Int64
	ctx := context.Background()
	lat := new(latencies)
	var failed atomic.Int64
	var firstErr atomic.Pointer[string]
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, rt0 := processCPU(), readRuntimeStats()
	began := time.Now()
	for w := 0; w < benchClients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			buf := make([]byte, 0, 128)
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				// A region per request: with -test.trace, go tool trace
				// shows each request's time split into running, waiting
				// to run, syscalls and GC (no cost when not tracing).
				rg := rtrace.StartRegion(ctx, "request")
				status, out, err := clients[w].echo(buf)
				rg.End()
				buf = out
				if err == nil && (status != 200 || !bytes.Equal(out, benchBody)) {
					err = fmt.Errorf("status %d, body %q", status, out)
				}
				if err != nil {
					if failed.Add(1) == 1 {
						msg := err.Error()
						firstErr.Store(&msg)
					}
					continue
				}
				lat.add(time.Since(t0))
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(began)
	cpu, rt := processCPU()-cpu0, readRuntimeStats().since(rt0)
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d requests failed, the first: %s", f, b.N, *firstErr.Load())
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat.quantile(0.50)), "p50-µs")
	b.ReportMetric(float64(lat.quantile(0.99)), "p99-µs")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
	b.ReportMetric(float64(rt.gcCycles)*1000/float64(b.N), "gc/kreq")
	b.ReportMetric(rt.gcCPU*1e6/float64(b.N), "gc-cpu-µs/req")
	b.ReportMetric(rt.schedQuantile(0.99)*1e6, "sched-p99-µs")
}

// runtimeStats is what the Go runtime counts of the process that tells
// where a request's time goes besides its own work: the collections
// (how often the collector's pauses and assists come upon the requests
// in flight), the collector's CPU time (the runtime's estimate: its
// workers, assists and pauses, added up at the end of each cycle, so a
// run with no completed cycle shows 0), and the histogram of scheduling
// latencies (how long goroutines were runnable before they ran: at 64
// requests in flight on 2 cores, nearly all of a request's latency).
type runtimeStats struct {
	gcCycles uint64
	gcCPU    float64 // seconds
	sched    *metrics.Float64Histogram
}

func readRuntimeStats() runtimeStats {
	s := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/sched/latencies:seconds"},
	}
	metrics.Read(s)
	return runtimeStats{gcCycles: s[0].Value.Uint64(), gcCPU: s[1].Value.Float64(), sched: s[2].Value.Float64Histogram()}
}

// since is what happened between old and rs.
func (rs runtimeStats) since(old runtimeStats) runtimeStats {
	h := &metrics.Float64Histogram{Buckets: rs.sched.Buckets, Counts: slices.Clone(rs.sched.Counts)}
	for i := range h.Counts {
		h.Counts[i] -= old.sched.Counts[i]
	}
	return runtimeStats{gcCycles: rs.gcCycles - old.gcCycles, gcCPU: rs.gcCPU - old.gcCPU, sched: h}
}

// schedQuantile is the lower bound, in seconds, of the scheduling
// latency bucket that holds the p-quantile (the runtime's buckets are
// about 12 % wide), 0 when nothing was counted.
func (rs runtimeStats) schedQuantile(p float64) float64 {
	var n uint64
	for _, c := range rs.sched.Counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := min(n-1, uint64(p*float64(n)))
	var seen uint64
	for i, c := range rs.sched.Counts {
		seen += c
		if seen > rank {
			return max(0, rs.sched.Buckets[i])
		}
	}
	return 0
}

// benchPool adds a router.pool of 2 echo routees and a route to it at
// /pool/echo.
const benchPool = `  - name: pl
    kind: router.pool
    routee: echo
    size: 2
    lifecycle: {auto_start: true}
  - name: pooled
    kind: http.route
    server: web
    method: POST
    path: /pool/echo
    to: pl
    lifecycle: {auto_start: true}
`

// benchBase is base with the timeouts of a server under load.
var benchBase = strings.NewReplacer("timeout: 300ms", "timeout: 5s", "read_header_timeout: 500ms", "read_header_timeout: 5s").Replace(base)

// BenchmarkHTTPServe is the server's side of BenchmarkHTTPEcho without
// the network and the clients: a request served by the http.server
// entry's handler (route match, payload, ask, reply, response) against a
// Lua echo process (lua) and a router.pool of 2 (pool2), one at a time
// and benchClients at once (parallel). A figure a busy
// machine disturbs far less than the end-to-end one.
func BenchmarkHTTPServe(b *testing.B) {
	for _, tc := range []struct{ name, config, path string }{
		{"lua", benchBase, "/echo"},
		{"pool2", benchBase + benchPool, "/pool/echo"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := startBench(b, tc.config).server("app:web")
			serve := func() { serveEcho(b, srv, tc.path) }
			b.Run("serial", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					serve()
				}
			})
			b.Run("parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(max(1, benchClients/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						serve()
					}
				})
			})
		})
	}
}

// serveEcho serves srv one echo request to path as net/http's server
// makes it of the clients' request, and checks the response.
func serveEcho(tb testing.TB, srv nethttp.Handler, path string) {
	w := discard{h: nethttp.Header{}}
	r := &nethttp.Request{Method: "POST", URL: &url.URL{Path: path}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: nethttp.Header{"Content-Type": {"text/plain"}, "User-Agent": {"Go-http-client/1.1"},
			"Accept-Encoding": {"gzip"}, "Content-Length": {"64"}},
		Body: io.NopCloser(bytes.NewReader(benchBody)), ContentLength: int64(len(benchBody)),
		Host: "127.0.0.1:8090", RemoteAddr: "127.0.0.1:40000", RequestURI: path}
	srv.ServeHTTP(&w, r)
	if w.code != 200 || w.n != len(benchBody) || w.h.Get("X-Echo") != "yes" {
		tb.Errorf("%d, %d bytes, X-Echo %q", w.code, w.n, w.h.Get("X-Echo"))
	}
}

// discard is a ResponseWriter that counts what it is given.
type discard struct {
	h    nethttp.Header
	code int
	n    int
}

func (d *discard) Header() nethttp.Header { return d.h }
func (d *discard) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}
func (d *discard) Write(p []byte) (int, error) {
	if d.code == 0 {
		d.code = 200
	}
	d.n += len(p)
	return len(p), nil
}
