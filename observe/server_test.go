package observe

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeSource struct {
	infos    []registry.EntryInfo
	notReady []registry.ID
}

func (f *fakeSource) Entries() []registry.EntryInfo { return f.infos }
func (f *fakeSource) NotReady() []registry.ID       { return f.notReady }
func (f *fakeSource) Info(id registry.ID) (registry.EntryInfo, bool) {
	for _, in := range f.infos {
		if in.Entry.ID == id {
			return in, true
		}
	}
	return registry.EntryInfo{}, false
}

type viewInst struct{ pid process.PID }

func (v viewInst) PID() process.PID { return v.pid }
func (v viewInst) View() any        { return map[string]int{"size": 3} }

func info(id, kind string, st registry.Status, inst registry.Instance) registry.EntryInfo {
	return registry.EntryInfo{
		Entry:      &registry.Entry{ID: registry.ID(id), Kind: kind, Pos: registry.Pos{File: "c.yaml", Line: 3, Col: 5}},
		EntryState: registry.EntryState{Status: st, Instance: inst},
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
	src := &fakeSource{infos: []registry.EntryInfo{
		info("app:w", "process.lua", registry.StatusDefined, nil),
		info("app:pool", "router.pool", registry.StatusRunning, viewInst{pid}),
		info("app:pg", "pg.scope", registry.StatusFailed, nil),
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
	var list []map[string]string
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
		t.Fatalf("%d %s", code, body)
	}
	want := []map[string]string{
		{"id": "app:pg", "kind": "pg.scope", "status": "failed"},
		{"id": "app:pool", "kind": "router.pool", "status": "running"},
		{"id": "app:w", "kind": "process.lua", "status": "defined"},
	}
	if len(list) != len(want) {
		t.Fatalf("entries %s", body)
	}
	for i := range want {
		if len(list[i]) != 3 || list[i]["id"] != want[i]["id"] || list[i]["kind"] != want[i]["kind"] || list[i]["status"] != want[i]["status"] {
			t.Fatalf("entry %d: %v, want %v", i, list[i], want[i])
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
