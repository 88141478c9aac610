package http_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/testutil"
	httpkind "github.com/proctor-run/proctor/kinds/http"
	"github.com/proctor-run/proctor/kinds/pool"
	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoLua replies with what the request's payload says to do.
const echoLua = `
local errors = require("errors")
return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    local r = msg:payload()
    if r.path == "/never" then
      -- never replies
    elseif r.path == "/hold" then
      log.info("holding the request")
    elseif r.path == "/sleep" then
      time.sleep("1500ms")
      msg:reply("slept")
    elseif r.path == "/slow" then
      time.sleep(100)
      msg:reply("slow")
    elseif r.path == "/twice" then
      msg:reply({status = 201, body = "first"})
      msg:reply({status = 202, body = "second"})
    elseif r.path == "/fail" then
      msg:reply(nil, errors.new({kind = r.query.kind or "internal", message = "failed on purpose"}))
    elseif r.path == "/crash" then
      error("boom")
    elseif r.path == "/raise" then
      error(errors.new({kind = "not_found", message = "secret 12345"}))
    elseif r.path == "/exit" then
      return "done"
    elseif r.path == "/exiterr" then
      return nil, errors.new({kind = "invalid", message = "secret 12345"})
    elseif r.path == "/header" then
      local name, val = "x-big", "v"
      if r.query.name then name = string.rep("x", tonumber(r.query.name)) end
      if r.query.value then val = string.rep("v", tonumber(r.query.value)) end
      local h = {[name] = val}
      for i = 1, tonumber(r.query.many or 0) do h["x-h" .. i] = string.rep("w", 1000) end
      msg:reply({headers = h, body = "headers"})
    elseif r.path == "/string" then
      msg:reply("plain " .. r.method)
    elseif r.path == "/json" then
      msg:reply({body = {method = r.method, params = r.params, query = r.query, key = r.key}})
    elseif r.path == "/cycle" or r.path == "/fn" then
      local body = function() end
      if r.path == "/cycle" then body = {}; body.t = body end
      local ok, err = msg:reply({body = body})
      assert(ok == nil and err.kind == "invalid", tostring(err))
    elseif r.path == "/bad" then
      msg:reply(42)
    else
      msg:reply({status = 200, headers = {["x-echo"] = "yes"}, body = r.body})
    end
  end
end }
`

type node struct {
	t    testing.TB
	dir  string
	rt   *runtime.Runtime
	kind *registry.Registry
	log  *testutil.SyncBuffer
}

func newKinds() *registry.Registry {
	k := registry.NewRegistry()
	k.Register(lua.NewKind(lua.Options{Stdout: io.Discard}))
	k.Register(pool.Kind{})
	k.Register(supervisor.NewPartitionKind())
	k.Register(httpkind.ServerKind{})
	k.Register(httpkind.RouteKind{})
	return k
}

// start runs config (app.yaml, with echo.lua beside it).
func start(t testing.TB, config string) *node {
	t.Helper()
	return startIn(t, t.TempDir(), config)
}

// startIn is start in dir.
func startIn(t testing.TB, dir, yamlText string) *node {
	t.Helper()
	return startOn(t, dir, yamlText, nil)
}

// startExample starts a node that runs an example docs/kinds/http.md
// shows as it is: it fails t unless the page holds yamlText and luaText,
// writes luaText to file in the node's directory, and serves yamlText's
// entries behind an http.server app:web.
func startExample(t *testing.T, what, file, luaText, yamlText string) *node {
	t.Helper()
	doc, err := os.ReadFile("../../docs/kinds/http.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{yamlText, luaText} {
		if !strings.Contains(string(doc), s) {
			t.Errorf("docs/kinds/http.md does not show the %s example as it is:\n%s", what, s)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(luaText), 0o644); err != nil {
		t.Fatal(err)
	}
	return startIn(t, dir, `namespace: app
entries:
  - name: web
    kind: http.server
    listen: 127.0.0.1:0
    lifecycle: {auto_start: true}

`+yamlText)
}

// startOn is startIn on pn (nil: a node of its own, logging to n.log).
func startOn(t testing.TB, dir, yamlText string, pn *process.Node) *node {
	t.Helper()
	n := &node{t: t, dir: dir, kind: newKinds(), log: &testutil.SyncBuffer{}}
	n.write("echo.lua", echoLua)
	n.write("app.yaml", yamlText)
	cfg, err := (&config.Loader{Kinds: n.kind}).Load(n.dir)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(n.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if pn == nil {
		pn = process.NewNode(process.Options{Name: "t", Logger: logger})
	}
	n.rt = runtime.NewRuntime(runtime.RuntimeOptions{Node: pn, Kinds: n.kind, Logger: logger})
	if err := n.rt.Start(context.Background(), cfg); err != nil {
		n.rt.Stop(context.Background())
		t.Fatalf("start: %v\n%s", err, n.log.String())
	}
	t.Cleanup(func() {
		if err := n.rt.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return n
}

func (n *node) write(name, text string) {
	n.t.Helper()
	if err := os.WriteFile(filepath.Join(n.dir, name), []byte(text), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// reload writes config and applies it.
func (n *node) reload(yamlText string) runtime.ReloadSummary {
	n.t.Helper()
	n.write("app.yaml", yamlText)
	_, sum, err := n.rt.Reload(context.Background(), &config.Loader{Kinds: n.kind}, n.dir)
	if err != nil {
		n.t.Fatalf("reload: %v", err)
	}
	return sum
}

func (n *node) server(id string) *httpkind.Server {
	n.t.Helper()
	inst, ok := n.rt.Instance(registry.ID(id))
	if !ok {
		n.t.Fatalf("%s is not running\n%s", id, n.log.String())
	}
	return inst.(*httpkind.Server)
}

func (n *node) url(path string) string { return "http://" + n.server("app:web").Addr() + path }

const base = `namespace: app
entries:
  - name: web
    kind: http.server
    listen: 127.0.0.1:0
    max_body: 1024
    read_header_timeout: 500ms
    read_timeout: 2s
    max_header_bytes: 4096
    lifecycle: {auto_start: true}
  - name: echo
    kind: process.lua
    source: file://echo.lua
  - name: any
    kind: http.route
    server: web
    method: [GET, POST]
    path: /{what...}
    to: echo
    timeout: 300ms
    lifecycle: {auto_start: true}
`

func get(t *testing.T, c *nethttp.Client, method, url, body string) (int, nethttp.Header, string) {
	t.Helper()
	req, err := nethttp.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func client() *nethttp.Client {
	return &nethttp.Client{Transport: &nethttp.Transport{}, Timeout: 10 * time.Second}
}

func TestRequestsAndErrors(t *testing.T) {
	n := start(t, base)
	c := client()
	defer c.CloseIdleConnections()
	cases := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/echo", "hello", 200, "hello"},
		{"GET", "/string", "", 200, "plain GET"},
		{"GET", "/json?a=1&a=2&b=x", "", 200, `{"method":"GET","params":{"what":"json"},"query":{"a":["1","2"],"b":"x"}}`},
		{"GET", "/fail?kind=invalid", "", 400, `{"error":{"kind":"invalid","message":"failed on purpose"}}`},
		{"GET", "/fail?kind=not_found", "", 404, `"kind":"not_found"`},
		{"GET", "/fail?kind=limit", "", 429, `"kind":"limit"`},
		{"GET", "/fail?kind=timeout", "", 504, `"kind":"timeout"`},
		{"GET", "/fail?kind=stopped", "", 503, `"kind":"stopped"`},
		{"GET", "/fail", "", 500, `"kind":"internal"`},
		{"GET", "/bad", "", 500, "replied with a number"},
		{"GET", "/cycle", "", 500, `{"error":{"kind":"internal","message":"the reply cannot be copied: reply.body.t: `},
		{"GET", "/fn", "", 500, `{"error":{"kind":"internal","message":"the reply cannot be copied: reply.body: `},
		{"GET", "/never", "", 504, `"kind":"timeout"`},
		{"GET", "/twice", "", 201, "first"},
		{"DELETE", "/echo", "", 405, `"kind":"invalid"`},
		{"POST", "/echo", strings.Repeat("x", 1025), 413, `"kind":"limit"`},
		{"GET", "/a%00b", "", 400, "control character (0x00 at offset 2)"},
	}
	for _, tc := range cases {
		status, h, body := get(t, c, tc.method, n.url(tc.path), tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, status, body, tc.status, tc.want)
		}
		if status == 405 && h.Get("Allow") == "" {
			t.Errorf("405 without Allow")
		}
		if status >= 400 && strings.Contains(body, "traceback") {
			t.Errorf("%s: a traceback reached the client: %s", tc.path, body)
		}
	}
	// Metrics, by server, route pattern, method and status.
	wantSeries(t, httpSeries(t, n), map[string]float64{
		"http_server_request_duration_seconds method=POST route=/{what...} server=app:web status=200": 1,
		"http_server_request_duration_seconds method=GET route=/{what...} server=app:web status=504":  2, // /never and /fail?kind=timeout
		"http_server_request_duration_seconds method=DELETE route= server=app:web status=405":         1,
		"http_server_request_duration_seconds method=POST route=/{what...} server=app:web status=413": 1,
		"http_server_active_requests route=/{what...} server=app:web":                                 0,
		"http_server_oversized_bodies_total route=/{what...} server=app:web":                          1,
	})
	// The process that replied twice, and the one that never replied,
	// still serve.
	if status, _, body := get(t, c, "POST", n.url("/echo"), "again"); status != 200 || body != "again" {
		t.Errorf("after: %d %q", status, body)
	}
}

// httpSeries returns the http_server_* series of n's registry, each keyed
// by its name and its labels (sorted by name, as the registry gives them):
// a histogram by its count, a gauge or counter by its value.
func httpSeries(t *testing.T, n *node) map[string]float64 {
	t.Helper()
	mfs, err := n.rt.Env().Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "http_server_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.GetHistogram() != nil:
				series[key] = float64(m.GetHistogram().GetSampleCount())
			case m.GetGauge() != nil:
				series[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				series[key] = m.GetCounter().GetValue()
			}
		}
	}
	return series
}

// Two servers with routes of the same pattern keep apart series (the
// server label), and the series of a pattern no route of a server uses
// any more — its route removed, or its path changed — are deleted on the
// reload; a pattern another route of the server still uses keeps its own.
func TestMetricsByServerAndReload(t *testing.T) {
	const web2 = `  - name: web2
    kind: http.server
    listen: 127.0.0.1:0
    lifecycle: {auto_start: true}
  - name: kept
    kind: http.route
    server: web2
    method: POST
    path: /kept
    to: echo
    lifecycle: {auto_start: true}
`
	n := start(t, base+web2+`  - name: any2
    kind: http.route
    server: web2
    path: /{what...}
    to: echo
    lifecycle: {auto_start: true}
  - name: keep
    kind: http.route
    server: web2
    method: PUT
    path: /kept
    to: echo
    lifecycle: {auto_start: true}
`)
	c := client()
	defer c.CloseIdleConnections()
	url2 := func(path string) string { return "http://" + n.server("app:web2").Addr() + path }
	for _, u := range []string{n.url("/string"), n.url("/string"), url2("/string"), url2("/kept")} {
		if status, _, body := get(t, c, "POST", u, ""); status != 200 {
			t.Fatalf("POST %s: %d %s", u, status, body)
		}
	}
	wantSeries(t, httpSeries(t, n), map[string]float64{
		"http_server_request_duration_seconds method=POST route=/{what...} server=app:web status=200":  2,
		"http_server_request_duration_seconds method=POST route=/{what...} server=app:web2 status=200": 1,
		"http_server_request_duration_seconds method=POST route=/kept server=app:web2 status=200":      1,
		"http_server_active_requests route=/{what...} server=app:web":                                  0,
		"http_server_active_requests route=/{what...} server=app:web2":                                 0,
		"http_server_oversized_bodies_total route=/{what...} server=app:web2":                          0,
		"http_server_refused_connections_total server=app:web2":                                        0,
	})
	// app:any's path changes, app:any2 and app:keep go: their patterns'
	// series go with them, but /kept is still app:kept's.
	n.reload(strings.Replace(base, "path: /{what...}", "path: /v2/{what...}", 1) + web2)
	if status, _, body := get(t, c, "POST", n.url("/v2/string"), ""); status != 200 {
		t.Fatalf("after the reload: %d %s", status, body)
	}
	series := httpSeries(t, n)
	for key := range series {
		if strings.Contains(key, "route=/{what...}") {
			t.Errorf("a pattern no route uses is still a series: %s", key)
		}
	}
	wantSeries(t, series, map[string]float64{
		"http_server_request_duration_seconds method=POST route=/v2/{what...} server=app:web status=200": 1,
		"http_server_request_duration_seconds method=POST route=/kept server=app:web2 status=200":        1,
		"http_server_active_requests route=/kept server=app:web2":                                        0,
	})
}

// wantSeries checks that each of want's series is in series, with its
// value.
func wantSeries(t *testing.T, series, want map[string]float64) {
	t.Helper()
	for key, v := range want {
		if got, ok := series[key]; !ok || got != v {
			t.Errorf("%s: %v (present %v), want %v", key, got, ok, v)
		}
	}
}

// A handler that ends with the request unanswered: a failure of its own
// (a script error, an error value raised whatever its kind, main
// returning nil, err) and a normal exit (main returned) are 500 internal
// with a fixed message; why, and the script's data, go to the log only.
// The node and its other entries serve on.
func TestCrashIs500AndNodeLives(t *testing.T) {
	cases := []struct{ path, message, logged string }{
		{"/crash", "the handler failed before it replied", "boom"},
		{"/raise", "the handler failed before it replied", "secret 12345"},
		{"/exiterr", "the handler failed before it replied", "secret 12345"},
		{"/exit", "the handler exited without replying", "exited (normal)"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			n := start(t, base)
			c := client()
			defer c.CloseIdleConnections()
			status, _, body := get(t, c, "GET", n.url(tc.path), "")
			want := `{"error":{"kind":"internal","message":"` + tc.message + `"}}` + "\n"
			if status != 500 || body != want {
				t.Errorf("%s: %d %s, want 500 %s", tc.path, status, body, want)
			}
			if !strings.Contains(n.log.String(), tc.logged) {
				t.Errorf("%s: the exit is not logged:\n%s", tc.path, n.log.String())
			}
			// The server still serves (the target is gone: 503).
			if status, _, body := get(t, c, "GET", n.url("/string"), ""); status != 503 || !strings.Contains(body, `"kind":"stopped"`) {
				t.Errorf("after: %d %s", status, body)
			}
		})
	}
}

// A handler stopped from outside while it holds a request (shut down by a
// supervisor, a reload, an operator) is a target that is stopping: 503
// stopped, which a client may retry.
func TestHandlerStoppedMidRequestIs503(t *testing.T) {
	n := start(t, strings.Replace(base, "timeout: 300ms", "timeout: 10s", 1))
	c := client()
	defer c.CloseIdleConnections()
	node := n.rt.Env().Node
	pid, err := node.Resolve("app:echo")
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   string
	}
	got := make(chan answer, 1)
	go func() { s, _, b := get(t, c, "GET", n.url("/hold"), ""); got <- answer{s, b} }()
	testutil.Eventually(t, "the handler holds the request", func() bool {
		return strings.Contains(n.log.String(), "holding the request")
	})
	if err := node.Terminate(pid); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.status != 503 || a.body != `{"error":{"kind":"stopped","message":"the handler was stopped before it replied"}}`+"\n" {
		t.Errorf("stopped mid-request: %d %s", a.status, a.body)
	}
}

func TestNotFoundAndPaths(t *testing.T) {
	n := start(t, strings.Replace(base, "path: /{what...}", "path: /users/{id}", 1))
	c := client()
	defer c.CloseIdleConnections()
	c.CheckRedirect = func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }
	if status, _, body := get(t, c, "GET", n.url("/nope"), ""); status != 404 || !strings.Contains(body, `"not_found"`) {
		t.Errorf("unknown path: %d %s", status, body)
	}
	// A path with .. is cleaned by a redirect, never served as written.
	if status, h, _ := get(t, c, "GET", n.url("/users/../users/7"), ""); (status != 301 && status != 307) || h.Get("Location") != "/users/7" {
		t.Errorf("..: %d %v", status, h)
	}
	// Raw, so no client cleans it first.
	resp := rawExchange(t, n.server("app:web").Addr(), "GET /users/%2e%2e/x HTTP/1.1\r\nHost: x\r\n\r\n")[0]
	if resp.StatusCode == 200 {
		t.Errorf("%%2e%%2e served: %d", resp.StatusCode)
	}
}

func TestValidation(t *testing.T) {
	cases := []struct{ yaml, want, not string }{
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: /x, to: ecko}`, `app.yaml:5:60: app:r: to: references app:ecko, which is not declared (did you mean "app:echo"?)`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: parts, kind: supervisor.partition, partitions: 2, process: echo}
  - {name: r, kind: http.route, server: web, path: "/x/{id}", to: parts}`, `app:r: to: app:parts is a supervisor.partition: set key`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: ch, kind: router.pool, routee: echo, size: 2, strategy: consistent_hash}
  - {name: r, kind: http.route, server: web, path: "/x/{id}", to: ch}`, `app.yaml:6:67: app:r: to: app:ch is a consistent_hash router.pool: set key (path.NAME, query.NAME or header.NAME) to pick its routee`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: parts, kind: supervisor.partition, partitions: 2, process: echo}
  - {name: r, kind: http.route, server: web, path: "/x/{id}", to: parts, key: params.id}`, `key: `, "set key"},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: "/x/{id}", to: echo, key: path.ib}`, `key: path has no wildcard {ib} (did you mean "path.id"?)`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: /x, to: echo, to_name: billing}`, `app.yaml:5:75: app:r: to_name: set to (an entry) or to_name (a registered name), not both`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: /x}`, `app:r: to: required: the entry that answers the requests (or to_name: a name a process registers at run time)`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: /x, to: ""}`, `app:r: to: required: the entry that answers the requests`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: /x, to_name: ""}`, `app:r: to_name: an empty name`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: /x, to_name: "app:echo"}`, `app.yaml:5:65: app:r: to_name: "app:echo" has a ':', which only entry IDs have (process.register refuses it): for the entry write to: app:echo`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: /x, to_name: billing@}`, `to_name: "billing@" is neither a name nor name@node`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: /x, to_name: a@b@n2}`, `to_name: "a@b@n2" is neither a name nor name@node (a name has no '@': process.register refuses it)`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: /x, to: echo, max_pending: 0}`, `max_pending: `, ""},
		{`
  - {name: web, kind: http.server, listen: nohost}`, `listen: want host:port`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: x, to: echo, method: GTE}`, `method: unknown method "GTE" (did you mean "GET"?)`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: web, path: /x, to: web}`, `to: references app:web, a http.server; must be process.lua or router.pool or router.group or supervisor.partition`, ""},
		{`
  - {name: web, kind: http.server, listen: 127.0.0.1:0}
  - {name: r, kind: http.route, server: echo, path: "/{a}/{a}", to: echo}`, `path: not a path pattern`, ""},
	}
	for _, tc := range cases {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "echo.lua"), []byte(echoLua), 0o644)
		cfg := "namespace: app\nentries:\n  - {name: echo, kind: process.lua, source: file://echo.lua}" + tc.yaml + "\n"
		os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(cfg), 0o644)
		_, err := (&config.Loader{Kinds: newKinds()}).Load(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s\ngot  %v\nwant %s", tc.yaml, err, tc.want)
		} else if tc.not != "" && strings.Contains(err.Error(), tc.not) {
			t.Errorf("%s\ngot  %v\nwhich says %q", tc.yaml, err, tc.not)
		}
	}
}

func TestPartitionAndPoolTargets(t *testing.T) {
	n := start(t, base+`  - name: parts
    kind: supervisor.partition
    partitions: 3
    process: echo
    lifecycle: {auto_start: true}
  - name: pl
    kind: router.pool
    routee: echo
    size: 2
    strategy: consistent_hash
    lifecycle: {auto_start: true}
  - name: by_user
    kind: http.route
    server: web
    method: POST
    path: /p/{user}/json
    to: parts
    key: path.user
    lifecycle: {auto_start: true}
  - name: by_pool
    kind: http.route
    server: web
    method: POST
    path: /q/json
    to: pl
    key: header.x-user
    lifecycle: {auto_start: true}
`)
	c := client()
	defer c.CloseIdleConnections()
	// The Lua echo answers /json only for that exact path; these reach it
	// as /p/... so it echoes the body: check the key arrives instead.
	status, _, body := get(t, c, "POST", n.url("/p/ann/json"), "to a partition")
	if status != 200 || body != "to a partition" {
		t.Errorf("partition: %d %q", status, body)
	}
	req, _ := nethttp.NewRequest("POST", n.url("/q/json"), strings.NewReader("to a pool"))
	req.Header.Set("X-User", "bob")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "to a pool" {
		t.Errorf("pool: %d %q", resp.StatusCode, b)
	}
	// Without the key the request is invalid.
	if status, _, body := get(t, c, "POST", n.url("/q/json"), "x"); status != 400 || !strings.Contains(body, "header.X-User") {
		t.Errorf("no key: %d %s", status, body)
	}
}

func TestTargetNotRunningIs503(t *testing.T) {
	n := start(t, base)
	c := client()
	defer c.CloseIdleConnections()
	pid, err := n.rt.Env().Node.Resolve("app:echo")
	if err != nil {
		t.Fatal(err)
	}
	_ = n.rt.Env().Node.Kill(pid)
	testutil.Eventually(t, "the echo process is gone", func() bool { return !n.rt.Env().Node.Alive(pid) })
	// Nothing restarts it: this runtime has no root supervisor.
	if _, ok := n.rt.Env().Node.Whereis("app:echo"); ok {
		t.Fatalf("app:echo is registered again")
	}
	status, _, body := get(t, c, "GET", n.url("/x"), "")
	if status != 503 || !strings.Contains(body, `{"error":{"kind":"stopped","message":"route app:any: app:echo: `) {
		t.Errorf("to not running: %d %s", status, body)
	}
}

func TestReloadRoutesKeepsConnections(t *testing.T) {
	n := start(t, base)
	c := client()
	defer c.CloseIdleConnections()
	conn, err := net.Dial("tcp", n.server("app:web").Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	ask := func(path string) int {
		t.Helper()
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
		resp, err := nethttp.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("the kept connection broke: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := ask("/string"); s != 200 {
		t.Fatalf("before: %d", s)
	}
	// Narrow the route, add another.
	next := strings.Replace(base, "path: /{what...}", "path: /only/{what...}", 1) + `  - name: other
    kind: http.route
    server: web
    path: /string
    to: echo
    lifecycle: {auto_start: true}
`
	sum := n.reload(next)
	if len(sum.Restarted) != 0 {
		t.Errorf("restarted %v", sum.Restarted)
	}
	if s := ask("/json"); s != 404 {
		t.Errorf("old path after reload: %d", s)
	}
	if s := ask("/string"); s != 200 {
		t.Errorf("new route: %d", s)
	}
	if s := ask("/only/string"); s != 200 {
		t.Errorf("changed route: %d", s)
	}
	v := n.server("app:web").View().(httpkind.ServerView)
	if len(v.Routes) != 2 || v.Routes[0].ID != "app:any" || v.Routes[0].Path != "/only/{what...}" || v.Routes[1].Path != "/string" || v.Connections < 1 {
		t.Errorf("view %+v", v)
	}
	if inst, _ := n.rt.Instance("app:other"); inst.(registry.Viewer).View().(httpkind.RouteView).To != "app:echo" {
		t.Errorf("route view %+v", inst.(registry.Viewer).View())
	}
	// Remove every route.
	n.reload(strings.SplitN(base, "  - name: any", 2)[0])
	if s := ask("/string"); s != 404 {
		t.Errorf("removed: %d", s)
	}
}

func TestRebindWithoutGap(t *testing.T) {
	n := start(t, base)
	oldAddr := n.server("app:web").Addr()
	c := client()
	defer c.CloseIdleConnections()
	// A request in flight across the rebind finishes.
	var wg sync.WaitGroup
	wg.Add(1)
	var slowStatus int
	go func() {
		defer wg.Done()
		slowStatus, _, _ = get(t, c, "GET", "http://"+oldAddr+"/never", "")
	}()
	// The request is in flight (its route's timeout is 300ms): in the
	// handler, not in the listen backlog, which the rebind closes.
	testutil.Eventually(t, "the request in flight", func() bool { return activeRequests(t, n) == 1 })
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	free := ln.Addr().String()
	ln.Close()
	sum := n.reload(strings.Replace(base, "listen: 127.0.0.1:0", "listen: "+free, 1))
	if len(sum.Restarted) != 0 {
		t.Errorf("restarted %v", sum.Restarted)
	}
	if got := n.server("app:web").Addr(); got != free {
		t.Fatalf("addr %s, want %s", got, free)
	}
	if status, _, body := get(t, c, "GET", "http://"+free+"/string", ""); status != 200 {
		t.Errorf("new address: %d %s", status, body)
	}
	wg.Wait()
	if slowStatus != 504 {
		t.Errorf("in flight across the rebind: %d", slowStatus)
	}
	if _, err := net.DialTimeout("tcp", oldAddr, time.Second); err == nil {
		t.Errorf("the old address still accepts")
	}
	// A timeout change keeps the socket.
	sum = n.reload(strings.Replace(strings.Replace(base, "listen: 127.0.0.1:0", "listen: "+free, 1), "read_timeout: 2s", "read_timeout: 3s", 1))
	if len(sum.Restarted) != 0 || n.server("app:web").Addr() != free {
		t.Errorf("timeout change: restarted %v", sum.Restarted)
	}
}

// A server added on a taken address fails its start, with the address
// and the cause; the rest of the reload stands and serves.
func TestTakenAddressFailsOnlyThatEntry(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	n := start(t, base)
	sum := n.reload(base + `  - name: web2
    kind: http.server
    listen: ` + ln.Addr().String() + `
    lifecycle: {auto_start: true, restart: {type: temporary}}
  - name: more
    kind: http.route
    server: web
    method: GET
    path: /more
    to: echo
    lifecycle: {auto_start: true}
`)
	if len(sum.Failed) != 1 || sum.Failed[0] != "app:web2" {
		more, _ := n.rt.Info("app:more")
		t.Errorf("failed %v (app:more: %v)", sum.Failed, more.Err)
	}
	info, _ := n.rt.Info("app:web2")
	// Where listen is written (base has 22 lines; web2 starts on 23).
	if info.Err == nil || !strings.Contains(info.Err.Error(), "address already in use") || strings.Count(info.Err.Error(), ln.Addr().String()) != 1 ||
		!strings.Contains(info.Err.Error(), "http server app:web2: "+filepath.Join(n.dir, "app.yaml")+":24:13: listen tcp "+ln.Addr().String()+": bind: address already in use") {
		t.Errorf("web2: %v", info.Err)
	}
	c := client()
	defer c.CloseIdleConnections()
	if status, _, _ := get(t, c, "GET", n.url("/more"), ""); status != 200 {
		t.Errorf("the rest: %d", status)
	}
}

// Stop waits for the requests in flight (a handler that answers at its
// 300ms timeout), and cuts them at its deadline.
func TestGracefulStop(t *testing.T) {
	for _, tc := range []struct {
		grace  time.Duration
		status int // 0: the connection is cut
	}{{5 * time.Second, 504}, {50 * time.Millisecond, 0}} {
		n := start(t, base)
		srv := n.server("app:web")
		addr := srv.Addr()
		c := client()
		done := make(chan int, 1)
		go func() {
			resp, err := c.Get("http://" + addr + "/never")
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		testutil.Eventually(t, "the request in flight", func() bool {
			v := srv.View().(httpkind.ServerView)
			return v.Connections == 1
		})
		time.Sleep(20 * time.Millisecond) // its headers are read: it waits on the handler
		ctx, cancel := context.WithTimeout(context.Background(), tc.grace)
		err := srv.Stop(ctx)
		cancel()
		if got := <-done; got != tc.status {
			t.Errorf("grace %s: the request in flight got %d, want %d (stop: %v)", tc.grace, got, tc.status, err)
		}
		if tc.status == 0 && err == nil {
			t.Errorf("grace %s: stop cut requests and said nothing", tc.grace)
		}
		if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			t.Errorf("the address still accepts after stop")
		}
		c.CloseIdleConnections()
	}
}

func TestSlowlorisAndHugeHeaders(t *testing.T) {
	n := start(t, base)
	addr := n.server("app:web").Addr()
	// Slowloris: headers that never end are cut at read_header_timeout.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /string HTTP/1.1\r\nHost: x\r\n")
	began := time.Now()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(conn)
	if d := time.Since(began); err != nil || d > 3*time.Second {
		t.Errorf("slowloris held for %s (%v)", d, err)
	}
	// A never-ending body is cut at max_body.
	conn2, _ := net.Dial("tcp", addr)
	defer conn2.Close()
	fmt.Fprintf(conn2, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	go func() {
		chunk := fmt.Sprintf("%x\r\n%s\r\n", 512, strings.Repeat("y", 512))
		for i := 0; i < 100; i++ {
			if _, err := conn2.Write([]byte(chunk)); err != nil {
				return
			}
		}
	}()
	conn2.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := nethttp.ReadResponse(bufio.NewReader(conn2), nil)
	if err != nil || resp.StatusCode != 413 {
		t.Errorf("endless body: %v %v", resp, err)
	}
	// Huge headers: 431.
	c := client()
	defer c.CloseIdleConnections()
	req, _ := nethttp.NewRequest("GET", n.url("/string"), nil)
	for i := 0; i < 200; i++ {
		req.Header.Set(fmt.Sprintf("X-Flood-%d", i), strings.Repeat("z", 100))
	}
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 431 {
		t.Errorf("header flood: %d", resp.StatusCode)
	}
	// Content-Length past max_body: 413 at once, the body unread.
	conn3, _ := net.Dial("tcp", addr)
	defer conn3.Close()
	fmt.Fprintf(conn3, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
	conn3.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err = nethttp.ReadResponse(bufio.NewReader(conn3), nil)
	if err != nil || resp.StatusCode != 413 {
		t.Errorf("content-length: %v %v", resp, err)
	}
	// The node serves on.
	if status, _, _ := get(t, c, "GET", n.url("/string"), ""); status != 200 {
		t.Errorf("after: %d", status)
	}
}

func TestMaxConnectionsRefuses(t *testing.T) {
	n := start(t, strings.Replace(base, "max_body: 1024", "max_body: 1024\n    max_connections: 2", 1))
	addr := n.server("app:web").Addr()
	// Two connections busy in a request (their headers unfinished).
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	testutil.Eventually(t, "two connections served", func() bool {
		v := n.server("app:web").View().(httpkind.ServerView)
		return v.Connections == 2
	})
	c3, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	c3.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := nethttp.ReadResponse(bufio.NewReader(c3), nil)
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("past the limit: %v %v", resp, err)
	}
	var body struct{ Error struct{ Kind string } }
	json.NewDecoder(resp.Body).Decode(&body)
	if body.Error.Kind != "limit" {
		t.Errorf("refused body: %+v", body)
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 named cn.
func writeCert(t *testing.T, dir, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(filepath.Join(dir, "web.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(filepath.Join(dir, "web.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}

// peerCN dials addr over TLS and returns the certificate's common name.
func peerCN(t *testing.T, addr string) (string, error) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return "", err
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /string HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, err := nethttp.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

// TLS: served with the files named; a certificate replaced on disk is
// served within a few seconds; turning tls off and on again on the same
// address rebinds without a restart.
func TestTLS(t *testing.T) {
	withTLS := strings.Replace(base, "max_body: 1024", "max_body: 1024\n    tls: {cert_file: web.crt, key_file: web.key}", 1)
	dir := t.TempDir()
	writeCert(t, dir, "first")
	n2 := startIn(t, dir, withTLS)
	addr := n2.server("app:web").Addr()
	if cn, err := peerCN(t, addr); err != nil || cn != "first" {
		t.Fatalf("tls: %q %v", cn, err)
	}
	time.Sleep(10 * time.Millisecond) // another modification time
	writeCert(t, dir, "second")
	testutil.Eventually(t, "the new certificate served", func() bool {
		cn, err := peerCN(t, addr)
		return err == nil && cn == "second"
	})
	fixed := strings.Replace(withTLS, "listen: 127.0.0.1:0", "listen: "+addr, 1)
	n2.reload(fixed)
	sum := n2.reload(strings.Replace(fixed, "\n    tls: {cert_file: web.crt, key_file: web.key}", "", 1))
	if len(sum.Restarted) != 0 {
		t.Errorf("tls off restarted %v", sum.Restarted)
	}
	c := client()
	defer c.CloseIdleConnections()
	if status, _, _ := get(t, c, "GET", "http://"+addr+"/string", ""); status != 200 {
		t.Errorf("plain after tls off: %d", status)
	}
	n2.reload(fixed)
	if cn, err := peerCN(t, addr); err != nil || cn != "second" {
		t.Errorf("tls on again: %q %v", cn, err)
	}
}

// A flood of 10,000 connections held open at once against
// max_connections 1,000 (the client's 10,000 ends and the server's 1,000
// stay within the 20,000 descriptors a test process has here) is turned
// away and counted, and the node serves the next client as soon as they
// go.
func TestConnectionFlood(t *testing.T) {
	// The first 1,000 hold their places for the whole test: were their
	// header timeout to end first (30 s did, on a loaded machine under
	// -race, where the dials alone took longer), later connections would
	// take the freed places and never reach the refusals counted below.
	held := strings.Replace(base, "read_header_timeout: 500ms", "read_header_timeout: 1h", 1)
	n := start(t, strings.Replace(held, "max_body: 1024", "max_body: 1024\n    max_connections: 1000", 1))
	addr := n.server("app:web").Addr()
	const flood = 10000
	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < flood; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		// Each holds its request open: headers without an end.
		fmt.Fprintf(c, "GET /string HTTP/1.1\r\nHost: x\r\n")
		conns = append(conns, c)
	}
	// 9,000 accepts to turn away, under -race and on a loaded machine:
	// took longer than Eventually's 10 s.
	testutil.EventuallyExplained(t, time.Minute, "connections past the limit turned away", func() bool {
		v := n.server("app:web").View().(httpkind.ServerView)
		return v.Connections <= 1000 && refused(t, n) >= flood-1000
	}, func() string {
		return fmt.Sprintf("%d connections open, %v refused", n.server("app:web").View().(httpkind.ServerView).Connections, refused(t, n))
	})
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	c := client()
	defer c.CloseIdleConnections()
	testutil.Eventually(t, "served again", func() bool {
		status, _, _ := get(t, c, "GET", n.url("/string"), "")
		return status == 200
	})
}

// activeRequests sums http_server_active_requests.
func activeRequests(t *testing.T, n *node) float64 {
	t.Helper()
	mfs, err := n.rt.Env().Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == "http_server_active_requests" {
			for _, m := range mf.GetMetric() {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// refused reads http_server_refused_connections_total of app:web.
func refused(t *testing.T, n *node) float64 {
	t.Helper()
	mfs, err := n.rt.Env().Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "http_server_refused_connections_total" {
			for _, m := range mf.GetMetric() {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// A full mailbox is 429: a handler busy with one request, one waiting in
// its mailbox of 1, and the next refused at once.
func TestFullMailboxIs429(t *testing.T) {
	n := start(t, strings.Replace(strings.Replace(base, "    source: file://echo.lua\n", "    source: file://echo.lua\n    mailbox_size: 1\n", 1), "timeout: 300ms", "timeout: 10s", 1))
	c := client()
	defer c.CloseIdleConnections()
	pid, err := n.rt.Env().Node.Resolve("app:echo")
	if err != nil {
		t.Fatal(err)
	}
	statuses := make(chan int, 2)
	go func() { s, _, _ := get(t, c, "GET", n.url("/sleep"), ""); statuses <- s }()
	testutil.Eventually(t, "the handler busy, its mailbox empty", func() bool {
		st, ok := n.rt.Env().Node.Mailbox(pid)
		return ok && st.Len == 0 && st.HighWater >= 1
	})
	go func() { s, _, _ := get(t, c, "GET", n.url("/sleep"), ""); statuses <- s }()
	testutil.Eventually(t, "one request queued", func() bool { st, _ := n.rt.Env().Node.Mailbox(pid); return st.Len == 1 })
	status, _, body := get(t, c, "GET", n.url("/string"), "")
	if status != 429 || !strings.Contains(body, `"kind":"limit"`) {
		t.Errorf("full mailbox: %d %s", status, body)
	}
	for i := 0; i < 2; i++ {
		if s := <-statuses; s != 200 {
			t.Errorf("a queued request got %d", s)
		}
	}
}

// A change of max_connections alone applies in place: the server is not
// restarted, the connections open across the change stay served, and
// the new limit holds, lowered and raised.
func TestMaxConnectionsChangesInPlace(t *testing.T) {
	held := strings.Replace(base, "read_header_timeout: 500ms", "read_header_timeout: 30s", 1)
	withMax := func(m int) string {
		return strings.Replace(held, "max_body: 1024", fmt.Sprintf("max_body: 1024\n    max_connections: %d", m), 1)
	}
	n := start(t, withMax(2))
	srv := n.server("app:web")
	addr := srv.Addr()
	type kept struct {
		c  net.Conn
		br *bufio.Reader
	}
	dial := func() kept {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return kept{c, bufio.NewReader(c)}
	}
	ask := func(k kept, what string) {
		t.Helper()
		fmt.Fprintf(k.c, "GET /string HTTP/1.1\r\nHost: x\r\n\r\n")
		k.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := nethttp.ReadResponse(k.br, nil)
		if err != nil {
			t.Fatalf("%s: the kept connection broke: %v", what, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", what, resp.StatusCode)
		}
	}
	// hold opens a connection that is served but never finishes its
	// headers: it holds a slot and is never idle.
	hold := func() kept {
		t.Helper()
		k := dial()
		fmt.Fprintf(k.c, "GET /string HTTP/1.1\r\nHost: x\r\n")
		return k
	}
	refusedNow := func(what string) {
		t.Helper()
		k := hold()
		k.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := nethttp.ReadResponse(k.br, nil)
		if err != nil || resp.StatusCode != 503 {
			t.Fatalf("%s: past the limit: %v %v (connections %d, refused %v)", what, resp, err, n.server("app:web").View().(httpkind.ServerView).Connections, refused(t, n))
		}
		resp.Body.Close()
	}
	connections := func(want int, what string) {
		t.Helper()
		testutil.Eventually(t, what, func() bool { return n.server("app:web").View().(httpkind.ServerView).Connections == want })
	}
	inPlace := func(sum runtime.ReloadSummary, what string) {
		t.Helper()
		if len(sum.Restarted) != 0 || n.server("app:web") != srv {
			t.Fatalf("%s: restarted %v", what, sum.Restarted)
		}
		if got := n.server("app:web").View().(httpkind.ServerView).MaxConnections; !strings.Contains(what, fmt.Sprint(got)) {
			t.Errorf("%s: the view says max_connections %d", what, got)
		}
	}
	a, b := dial(), dial()
	ask(a, "a before")
	ask(b, "b before")

	inPlace(n.reload(withMax(3)), "raised to 3")
	ask(a, "a after raising")
	ask(b, "b after raising")
	inPlace(n.reload(withMax(1)), "lowered to 1")
	ask(a, "a after lowering")
	ask(b, "b after lowering")

	// Lowered to 1: with a and b gone, one connection is served and the
	// next, none being idle, is refused.
	a.c.Close()
	b.c.Close()
	connections(0, "a and b closed")
	hold()
	connections(1, "one connection under max 1")
	refusedNow("max 1")

	// Raised to 3 with one held: two more are served, the fourth refused.
	inPlace(n.reload(withMax(3)), "raised to 3 again")
	hold()
	hold()
	connections(3, "three connections under max 3")
	refusedNow("max 3")
	if got := refused(t, n); got != 2 {
		t.Errorf("refused %v, want 2", got)
	}
}

// Slow clients are cut by the timeouts, whether they trickle their
// headers (slowloris proper: a byte every 50ms, each well within any
// per-read timeout) or their body, and the node serves on.
func TestSlowClientsAreCut(t *testing.T) {
	n := start(t, base) // read_header_timeout 500ms, read_timeout 2s
	addr := n.server("app:web").Addr()
	// trickle sends head, then one byte of drip every 50ms until the
	// server ends the connection; it returns how long that took and what
	// the client read.
	trickle := func(head, what string) (time.Duration, string) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		read := make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(conn)
			read <- string(b)
		}()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case got := <-read:
				return time.Since(began), got
			case <-tick.C:
				if time.Since(began) > 20*time.Second {
					t.Fatalf("%s: still connected after 20s", what)
				}
				_, _ = conn.Write([]byte("a")) // an error: the server closed; read ends next
			}
		}
	}
	if d, got := trickle("GET /string HTTP/1.1\r\nHost: x\r\nX-Slow: ", "trickled headers"); d > 5*time.Second || strings.Contains(got, "200 OK") {
		t.Errorf("trickled headers: cut after %s (read_header_timeout 500ms), read %q", d, got)
	}
	// (The answer may be lost: the client's bytes still arriving after the
	// server closed make its kernel reset the connection.)
	if d, got := trickle("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", "trickled body"); d > 8*time.Second || (got != "" && !strings.HasPrefix(got, "HTTP/1.1 408 ")) {
		t.Errorf("trickled body: cut after %s (read_timeout 2s), read %q", d, got)
	}
	// A body that stops coming is 408, saying which timeout cut it.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\npart of it"); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := nethttp.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 408 || string(b) != `{"error":{"kind":"timeout","message":"the body did not arrive within read_timeout (2s)"}}`+"\n" {
		t.Errorf("stalled body: %d %s", resp.StatusCode, b)
	}
	c := client()
	defer c.CloseIdleConnections()
	if status, _, _ := get(t, c, "GET", n.url("/string"), ""); status != 200 {
		t.Errorf("after: %d", status)
	}
}

// Many requests to a handler that never replies each get 504 at the
// route's timeout; none stays active, the handler serves on, and the
// package's goleak check finds no goroutine left behind.
func TestNeverReplyingHandlerUnderLoad(t *testing.T) {
	n := start(t, base) // route timeout 300ms
	c := client()
	defer c.CloseIdleConnections()
	const clients = 64
	statuses := getMany(c, n.url("/never"), clients)
	for i := 0; i < clients; i++ {
		if s := <-statuses; s != 504 {
			t.Errorf("never replied: %d, want 504", s)
		}
	}
	testutil.Eventually(t, "no request active", func() bool { return activeRequests(t, n) == 0 })
	if status, _, body := get(t, c, "POST", n.url("/echo"), "still here"); status != 200 || body != "still here" {
		t.Errorf("after: %d %q", status, body)
	}
}

// getMany sends n GET requests to url at once; each one's status (0 for
// a failed request) arrives on the channel.
func getMany(c *nethttp.Client, url string, n int) <-chan int {
	statuses := make(chan int, n)
	for i := 0; i < n; i++ {
		go func() {
			resp, err := c.Get(url)
			if err != nil {
				statuses <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	return statuses
}

// A flood of requests at a slow handler leaves no outage behind: the asks
// that timed out while queued are dropped when the handler reaches them
// (dead letters, reason expired) instead of run, so the first request
// after the flood waits at most for the one in hand, not for the backlog
// (64 requests of 100ms against a 1s timeout left 5 s of work, every
// request meanwhile a 504).
func TestSlowHandlerBacklogExpires(t *testing.T) {
	n := start(t, strings.Replace(base, "timeout: 300ms", "timeout: 1s", 1))
	c := client()
	defer c.CloseIdleConnections()
	const flood = 64
	statuses := getMany(c, n.url("/slow"), flood)
	timedOut := 0
	for i := 0; i < flood; i++ {
		switch s := <-statuses; s {
		case 504:
			timedOut++
		case 200:
		default:
			t.Errorf("flood: %d", s)
		}
	}
	if timedOut < flood/2 {
		t.Fatalf("only %d of %d requests timed out: no backlog was built", timedOut, flood)
	}
	if status, _, body := get(t, c, "GET", n.url("/string"), ""); status != 200 || body != "plain GET" {
		t.Errorf("right after the flood: %d %s", status, body)
	}
}

// TestResponseFraming: on one kept connection, bodies of known and of
// unknown (chunked) length are read whole and echoed with a
// Content-Length, small ones and ones past net/http's chunking buffer; a
// HEAD answer says the length of nothing; a reply's headers and content
// type arrive, and the connection stays usable throughout.
func TestResponseFraming(t *testing.T) {
	n := start(t, strings.Replace(base, "max_body: 1024", "max_body: 8192", 1))
	conn, err := net.Dial("tcp", n.server("app:web").Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	chunked := func(s string) string {
		var b strings.Builder
		for len(s) > 0 {
			k := min(len(s), 700)
			fmt.Fprintf(&b, "%x\r\n%s\r\n", k, s[:k])
			s = s[k:]
		}
		return b.String() + "0\r\n\r\n"
	}
	long := strings.Repeat("0123456789", 300) // 3000 bytes
	cases := []struct {
		name, req, body string
		head            bool
	}{
		{"small", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", "hello", false},
		{"long", fmt.Sprintf("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(long), long), long, false},
		{"chunked small", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked("hi there"), "hi there", false},
		{"chunked long", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(long), long, false},
		{"empty", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "", false},
		{"head", "HEAD /echo HTTP/1.1\r\nHost: x\r\n\r\n", "", true},
	}
	for _, tc := range cases {
		if _, err := io.WriteString(conn, tc.req); err != nil {
			t.Fatal(err)
		}
		req := &nethttp.Request{Method: "POST"}
		if tc.head {
			req.Method = "HEAD"
		}
		resp, err := nethttp.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("%s: the kept connection broke: %v", tc.name, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(got) != tc.body {
			t.Errorf("%s: %d %q %v, want 200 %q", tc.name, resp.StatusCode, clipped(string(got)), err, clipped(tc.body))
		}
		if resp.ContentLength != int64(len(tc.body)) || len(resp.TransferEncoding) != 0 {
			t.Errorf("%s: Content-Length %d, Transfer-Encoding %v; want %d and none", tc.name, resp.ContentLength, resp.TransferEncoding, len(tc.body))
		}
		if resp.Header.Get("X-Echo") != "yes" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("%s: headers %v", tc.name, resp.Header)
		}
	}
}

func clipped(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// A reply's headers are bounded (MaxReplyHeaderBytes, 64 KiB as sent):
// a 2 MB value, a 200 KB name or many headers adding up past it are a 500
// internal naming the largest header (its name clipped), never its data;
// a set under the bound is sent whole, and the connection stays usable.
func TestReplyHeaderBytesBounded(t *testing.T) {
	n := start(t, base)
	c := client()
	defer c.CloseIdleConnections()
	cases := []struct {
		query  string
		status int
		want   string
	}{
		{"value=2000000", 500, `{"error":{"kind":"internal","message":"the handler's reply headers are 2000050 bytes, more than 65536; the largest is X-Big (2000009 bytes)"}}`},
		{"name=200000", 500, `; the largest is X` + strings.Repeat("x", 63) + `… (200005 bytes)"}}`},
		{"many=70", 500, `more than 65536; the largest is X-H`},
		{"value=60000", 200, "headers"},
	}
	for _, tc := range cases {
		status, h, body := get(t, c, "GET", n.url("/header?"+tc.query), "")
		if status != tc.status || !strings.Contains(body, tc.want) || strings.Contains(body, "vvvv") || len(body) > 2048 {
			t.Errorf("%s: %d %s, want %d with %s", tc.query, status, clipped(body), tc.status, tc.want)
		}
		if status == 500 && (h.Get("X-Big") != "" || h.Get("X-H1") != "") {
			t.Errorf("%s: the refused headers were sent", tc.query)
		}
		if status == 200 && len(h.Get("X-Big")) != 60000 {
			t.Errorf("%s: X-Big of %d bytes", tc.query, len(h.Get("X-Big")))
		}
	}
}

// A routee of a router.pool that fails before it replies is the same 500
// internal (the pool restarts it in its slot and serves on).
func TestPoolRouteeCrashIs500(t *testing.T) {
	n := start(t, base+`  - name: pl
    kind: router.pool
    routee: echo
    size: 2
    lifecycle: {auto_start: true}
  - name: crash_pool
    kind: http.route
    server: web
    method: GET
    path: /crash
    to: pl
    lifecycle: {auto_start: true}
  - name: pool_echo
    kind: http.route
    server: web
    method: POST
    path: /pool/echo
    to: pl
    lifecycle: {auto_start: true}
`)
	c := client()
	defer c.CloseIdleConnections()
	status, _, body := get(t, c, "GET", n.url("/crash"), "")
	if want := `{"error":{"kind":"internal","message":"the handler failed before it replied"}}` + "\n"; status != 500 || body != want {
		t.Errorf("a routee's crash: %d %s, want 500 %s", status, body, want)
	}
	// Both routees serve (round robin): the crashed one was restarted.
	for i := 0; i < 2; i++ {
		testutil.Eventually(t, "the pool serves", func() bool {
			status, _, body := get(t, c, "POST", n.url("/pool/echo"), "hi")
			return status == 200 && body == "hi"
		})
	}
}
