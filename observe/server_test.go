package observe

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeSource struct {
	infos    []runtime.EntryInfo
	notReady []registry.ID
}

func (f *fakeSource) Entries() []runtime.EntryInfo { return f.infos }
func (f *fakeSource) NotReady() []registry.ID      { return f.notReady }
func (f *fakeSource) Info(id registry.ID) (runtime.EntryInfo, bool) {
	for _, in := range f.infos {
		if in.Entry.ID == id {
			return in, true
		}
	}
	return runtime.EntryInfo{}, false
}

type viewInst struct{ pid process.PID }

func (v viewInst) PID() process.PID { return v.pid }
func (v viewInst) View() any        { return map[string]int{"size": 3} }

func info(id, kind string, st runtime.Status, inst registry.Instance) runtime.EntryInfo {
	return runtime.EntryInfo{
		Entry:      &registry.Entry{ID: registry.ID(id), Kind: kind, Pos: registry.Pos{File: "c.yaml", Line: 3, Col: 5}},
		EntryState: runtime.EntryState{Status: st, Instance: inst},
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

func TestEndpoints(t *testing.T) {
	pid := process.PID{Node: "n", ID: 7, Creation: 1}
	outdated := info("app:w", "process.lua", runtime.StatusDefined, nil)
	outdated.Outdated = 2
	src := &fakeSource{infos: []runtime.EntryInfo{
		outdated,
		info("app:pool", "router.pool", runtime.StatusRunning, viewInst{pid}),
		info("app:pg", "pg.scope", runtime.StatusFailed, nil),
	}, notReady: []registry.ID{"app:pg"}}
	health := NewHealth()
	reg := prometheus.NewRegistry()
	RegisterStandardCollectors(reg)
	RegisterStandardCollectors(reg)
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "proctor_test_total", Help: "t"})
	reg.MustRegister(c)
	c.Inc()
	h := Handler(Options{Runtime: src, Health: health, Metrics: reg, Logger: slog.New(slog.DiscardHandler)})

	code, body := get(t, h, "/v1/entries")
	var list []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
		t.Fatalf("%d %s", code, body)
	}
	want := []map[string]any{
		{"id": "app:pg", "kind": "pg.scope", "status": "failed", "outdated": float64(0)},
		{"id": "app:pool", "kind": "router.pool", "status": "running", "outdated": float64(0)},
		{"id": "app:w", "kind": "process.lua", "status": "defined", "outdated": float64(2)},
	}
	if len(list) != len(want) {
		t.Fatalf("entries %s", body)
	}
	for i := range want {
		if len(list[i]) != len(want[i]) {
			t.Fatalf("entry %d: %v, want %v", i, list[i], want[i])
		}
		for k, v := range want[i] {
			if list[i][k] != v {
				t.Fatalf("entry %d: %v, want %v", i, list[i], want[i])
			}
		}
	}

	code, body = get(t, h, "/v1/entries/app:pool")
	if code != 200 || !strings.Contains(body, `"size": 3`) || !strings.Contains(body, `"pid": "<n.7.1>"`) || !strings.Contains(body, `"declared": "c.yaml:3:5"`) {
		t.Fatalf("detail %d %s", code, body)
	}
	if code, _ = get(t, h, "/v1/entries/app:nope"); code != 404 {
		t.Fatalf("missing entry: %d", code)
	}
	code, body = get(t, h, "/v1/pools")
	if code != 200 || !strings.Contains(body, `"id": "app:pool"`) || !strings.Contains(body, `"size": 3`) {
		t.Fatalf("pools %s", body)
	}
	if code, body = get(t, h, "/v1/pg"); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("pg lists only running scopes: %s", body)
	}
	if code, body = get(t, h, "/v1/supervisors"); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("supervisors %s", body)
	}

	health.SetCheck("db", func() error { return nil })
	if code, body = get(t, h, "/healthz"); code != 200 || !strings.Contains(body, `"db": "ok"`) {
		t.Fatalf("healthz %d %s", code, body)
	}
	health.SetCheck("entry.app:pg", func() error { return errors.New("gave up") })
	health.SetCheck("boom", func() error { panic("x") })
	code, body = get(t, h, "/healthz")
	if code != 503 || !strings.Contains(body, `"entry.app:pg": "gave up"`) || !strings.Contains(body, "check panicked") {
		t.Fatalf("healthz failing %d %s", code, body)
	}
	health.RemoveCheck("entry.app:pg")
	health.RemoveCheck("boom")
	if code, _ = get(t, h, "/healthz"); code != 200 {
		t.Fatalf("healthz after removal %d", code)
	}

	if code, body = get(t, h, "/readyz"); code != 503 || !strings.Contains(body, "app:pg") {
		t.Fatalf("readyz %d %s", code, body)
	}
	src.notReady = nil
	if code, _ = get(t, h, "/readyz"); code != 200 {
		t.Fatalf("readyz ready %d", code)
	}

	code, body = get(t, h, "/metrics")
	if code != 200 || !strings.Contains(body, "proctor_test_total 1") || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("metrics %d %.300s", code, body)
	}
}

func TestListen(t *testing.T) {
	s, err := Listen("127.0.0.1:0", http.NotFoundHandler(), ListenOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + s.Addr().String() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	http.DefaultClient.CloseIdleConnections()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(s.Addr().String()+"x", http.NotFoundHandler(), ListenOptions{}); err == nil {
		t.Fatal("bad address accepted")
	}
}

// reloadSource is a fakeSource that reloads.
type reloadSource struct {
	fakeSource
	last    *runtime.ReloadAttempt
	running *runtime.ReloadProgress
	history []runtime.ReloadAttempt
}

func (r *reloadSource) ReloadHistory() []runtime.ReloadAttempt { return r.history }

func (r *reloadSource) ReloadInProgress() (runtime.ReloadProgress, bool) {
	if r.running == nil {
		return runtime.ReloadProgress{}, false
	}
	return *r.running, true
}

func (r *reloadSource) LastReload() (runtime.ReloadAttempt, bool) {
	if r.last == nil {
		return runtime.ReloadAttempt{}, false
	}
	return *r.last, true
}

// GET /v1/reload gives the last attempt; /healthz stays healthy after a
// rejected reload, since the configuration in force still runs, and shows
// the rejection as its reload check.
func TestReloadStatusEndpoints(t *testing.T) {
	src := &reloadSource{}
	h := Handler(Options{Runtime: src, Health: NewHealth(), Metrics: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	if code, body := get(t, h, "/v1/reload"); code != 404 || !strings.Contains(body, "no reload has been attempted yet") {
		t.Fatalf("before any reload: %d %s", code, body)
	}
	if code, body := get(t, h, "/healthz"); code != 200 || !strings.Contains(body, `"reload": "ok"`) {
		t.Fatalf("healthz %d %s", code, body)
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	src.last = &runtime.ReloadAttempt{Time: at, Result: runtime.ReloadRejected,
		Errors: []string{"c.yaml:6:5: app:p: sise: unknown field (did you mean \"size\"?)", "c.yaml:9:1: app:q: kind: required"}}
	code, body := get(t, h, "/v1/reload")
	var got runtime.ReloadAttempt
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil || got.Result != "rejected" || !got.Time.Equal(at) || len(got.Errors) != 2 ||
		got.Errors[0] != src.last.Errors[0] || !strings.Contains(body, `"added": 0`) || !strings.Contains(body, `"unchanged": 0`) {
		t.Fatalf("/v1/reload %d %s", code, body)
	}
	code, body = get(t, h, "/healthz")
	if code != 200 || !strings.Contains(body, `"status": "ok"`) ||
		!strings.Contains(body, `"reload": "last reload rejected at 2026-11-30T12:00:00Z, nothing changed: 2 errors, the first: c.yaml:6:5: app:p: sise: unknown field`) ||
		!strings.Contains(body, `"warnings"`) {
		t.Fatalf("healthz after a rejected reload: %d %s", code, body)
	}
	// A rejection after a degraded reload does not hide that the
	// configuration in force is degraded.
	degraded := runtime.ReloadAttempt{Time: at.Add(-time.Minute), Result: runtime.ReloadApplied, Crashed: 1, Warnings: []string{"app:svc failed 2ms after the reload: boom"}}
	src.history = []runtime.ReloadAttempt{degraded, *src.last}
	if code, body := get(t, h, "/healthz"); code != 200 || !strings.Contains(body, "nothing changed: 2 errors") ||
		!strings.Contains(body, "the configuration in force came with a reload that was degraded: last reload applied at 2026-11-30T11:59:00Z, but app:svc failed 2ms after the reload: boom") {
		t.Fatalf("healthz after a rejection that followed a degraded reload: %d %s", code, body)
	}
	src.history = nil
	src.last = &runtime.ReloadAttempt{Time: at, Result: runtime.ReloadApplied, Added: 1, Unchanged: 4}
	if code, body := get(t, h, "/healthz"); code != 200 || !strings.Contains(body, `"reload": "ok"`) || strings.Contains(body, "warnings") {
		t.Fatalf("healthz after an applied reload: %d %s", code, body)
	}
	if code, body := get(t, h, "/v1/reload"); code != 200 || !strings.Contains(body, `"added": 1`) || strings.Contains(body, "errors") || strings.Contains(body, "in_progress") {
		t.Fatalf("/v1/reload %d %s", code, body)
	}
	// A reload under way (a slow start) shows, in both, without failing
	// the probe.
	src.running = &runtime.ReloadProgress{Since: at}
	if code, body := get(t, h, "/v1/reload"); code != 200 || !strings.Contains(body, `"added": 1`) || !strings.Contains(body, `"in_progress": {
    "since": "2026-11-30T12:00:00Z"`) {
		t.Fatalf("/v1/reload during a reload %d %s", code, body)
	}
	if code, body := get(t, h, "/healthz"); code != 200 || !strings.Contains(body, `"reload": "a reload is under way since 2026-11-30T12:00:00Z`) || !strings.Contains(body, "warnings") {
		t.Fatalf("healthz during a reload: %d %s", code, body)
	}
	src.last = nil
	if code, body := get(t, h, "/v1/reload"); code != 200 || !strings.Contains(body, `"in_progress"`) || strings.Contains(body, "result") {
		t.Fatalf("/v1/reload during the first reload %d %s", code, body)
	}
}

// secretKind reads a dsn and shows it in its view, as a careless kind
// would.
type secretKind struct{}

func (secretKind) Name() string                   { return "test.secret" }
func (secretKind) Decode(d *registry.Decoder) any { return d.String("dsn", "") }

type secretInst struct {
	pid process.PID
	dsn string
}

func (s secretInst) PID() process.PID { return s.pid }
func (s secretInst) View() any        { return map[string]any{"dsn": s.dsn, "tries": []any{3, s.dsn}} }

// Values an entry took from the environment never show in /v1: not in its
// error, not in its kind's view.
func TestSecretsStayOutOfV1(t *testing.T) {
	kinds := registry.NewRegistry()
	kinds.Register(secretKind{})
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("namespace: app\nentries:\n  - name: db\n    kind: test.secret\n    dsn: postgres://app:${env:DB_PASSWORD}@db\n    meta: {note: \"${env:DB_PASSWORD}\"}\n"), 0o644)
	cfg, err := (&config.Loader{Kinds: kinds, Environ: func() []string { return []string{"DB_PASSWORD=s3cr3t-pw"} }}).Load(p)
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Entries["app:db"]
	in := runtime.EntryInfo{Entry: e, EntryState: runtime.EntryState{Status: runtime.StatusRunning,
		Instance: secretInst{pid: process.PID{Node: "n", ID: 1}, dsn: e.Spec.(string)}, Err: errors.New("connect postgres://app:s3cr3t-pw@db: refused")}}
	src := &fakeSource{infos: []runtime.EntryInfo{in}}
	h := Handler(Options{Runtime: src, Health: NewHealth(), Metrics: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	for _, path := range []string{"/v1/entries/app:db", "/v1/entries", "/v1/pools", "/v1/pg", "/v1/supervisors"} {
		code, body := get(t, h, path)
		if code != 200 || strings.Contains(body, "s3cr3t") {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
	_, body := get(t, h, "/v1/entries/app:db")
	if !strings.Contains(body, `"dsn": "postgres://app:${env:DB_PASSWORD}@db"`) || !strings.Contains(body, `"error": "connect postgres://app:${env:DB_PASSWORD}@db: refused"`) ||
		!strings.Contains(body, `"note": "${env:DB_PASSWORD}"`) || !strings.Contains(body, `3,`) {
		t.Fatalf("detail %s", body)
	}
}

// pagedInst is a view that pages, as a pg scope's does; it shows the page
// it was asked for.
type pagedInst struct{ viewInst }

func (p pagedInst) View() any                         { return p.ViewPage(registry.ViewPage{}) }
func (p pagedInst) ViewPage(pg registry.ViewPage) any { return pg.WithDefaults() }

// GET /v1/pg reads the page of each scope's view from the query, and
// refuses a bad one; the live view asks for a small page.
func TestPagedViews(t *testing.T) {
	src := &fakeSource{infos: []runtime.EntryInfo{
		info("app:pg", "pg.scope", runtime.StatusRunning, pagedInst{viewInst{process.PID{Node: "n", ID: 7, Creation: 1}}}),
	}}
	s := newServer(Options{Runtime: src, Health: NewHealth(), Metrics: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	h := Handler(Options{Runtime: src, Health: NewHealth(), Metrics: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	page := func(path string) registry.ViewPage {
		t.Helper()
		code, body := get(t, h, path)
		var out []struct{ View registry.ViewPage }
		if err := json.Unmarshal([]byte(body), &out); code != 200 || err != nil || len(out) != 1 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		return out[0].View
	}
	if got := page("/v1/pg"); got != (registry.ViewPage{GroupLimit: registry.DefaultViewLimit, Limit: registry.DefaultViewLimit}) {
		t.Fatalf("default page %+v", got)
	}
	want := registry.ViewPage{Group: "g1", GroupOffset: 2, GroupLimit: 5, Offset: 100, Limit: 50}
	if got := page("/v1/pg?group=g1&group_offset=2&group_limit=5&offset=100&limit=50"); got != want {
		t.Fatalf("page %+v, want %+v", got, want)
	}
	for _, q := range []string{"limit=0", "limit=x", "offset=-1", "group_limit=1000001", "group_offset=a"} {
		if code, body := get(t, h, "/v1/pg?"+q); code != http.StatusBadRequest || !strings.Contains(body, "want an integer") {
			t.Fatalf("%s: %d %s", q, code, body)
		}
	}
	// A page is for reading: 100,000 groups of 100,000 members each let 40
	// requests take gigabytes. The 400 says what the cap is and how to page.
	for q, want := range map[string]string{
		"limit=1001":         `limit \"1001\": want an integer from 1 to 1000 (a page holds at most 1000; page through with offset)`,
		"group_limit=100000": `group_limit \"100000\": want an integer from 1 to 1000 (a page holds at most 1000; page through with group_offset)`,
	} {
		if code, body := get(t, h, "/v1/pg?"+q); code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Fatalf("%s: %d %s", q, code, body)
		}
	}
	if got := page("/v1/pg?limit=1000&group_limit=1000"); got.Limit != 1000 || got.GroupLimit != 1000 {
		t.Fatalf("the largest page: %+v", got)
	}
	st := s.state()
	if len(st.Scopes) != 1 || st.Scopes[0].View.(registry.ViewPage).Limit != 40 {
		t.Fatalf("the live view's page: %+v", st.Scopes)
	}
}
