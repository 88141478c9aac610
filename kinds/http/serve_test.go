package http_test

import "testing"

// TestServeAllocations: an echo request served by the http.server's
// handler, to a Lua process and through a router.pool of 2, allocates no
// Go map for the reply: the route's ask takes a value.Record
// (process.Call.AcceptRecord), so the Lua handler's reply table and its
// headers are one allocation each, not two. Before: 44 and 38; 42 and
// 36 now (BenchmarkHTTPServe serial).
func TestServeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under -race")
	}
	for _, tc := range []struct {
		name, config, path string
		max                float64
	}{
		{"lua", benchBase, "/echo", 43},
		{"pool2", benchBase + benchPool, "/pool/echo", 37},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startBench(t, tc.config).server("app:web")
			serveEcho(t, srv, tc.path) // the routes and the processes warm
			a := testing.AllocsPerRun(500, func() { serveEcho(t, srv, tc.path) })
			t.Logf("%.1f allocations a request", a)
			if a > tc.max {
				t.Errorf("%.1f allocations a request, want at most %.0f", a, tc.max)
			}
		})
	}
}
