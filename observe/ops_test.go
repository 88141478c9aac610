package observe

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

func opsHandler(ops Ops) http.Handler {
	return Handler(Options{Runtime: &fakeSource{}, Health: NewHealth(), Metrics: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler), Ops: ops})
}

func TestLivez(t *testing.T) {
	if code, body := get(t, opsHandler(Ops{}), "/livez"); code != 200 || !strings.Contains(body, `"alive"`) {
		t.Fatalf("%d %s", code, body)
	}
	var dead atomic.Bool
	h := opsHandler(Ops{Live: func() error {
		if dead.Load() {
			return errors.New("the root supervisor died: boom")
		}
		return nil
	}})
	if code, _ := get(t, h, "/livez"); code != 200 {
		t.Fatalf("alive: %d", code)
	}
	dead.Store(true)
	if code, body := get(t, h, "/livez"); code != 503 || !strings.Contains(body, "root supervisor died") {
		t.Fatalf("dead: %d %s", code, body)
	}
}

func TestDeadLettersEndpoint(t *testing.T) {
	if code, _ := get(t, opsHandler(Ops{}), "/v1/dead-letters"); code != 404 {
		t.Fatalf("without a sink: %d", code)
	}
	d := NewDeadLetters(DeadLetterOptions{Keep: 2, Logger: slog.New(slog.DiscardHandler)})
	defer d.Close()
	d.DeadLetter(letter(process.DeadNoReplyTarget, "app:pool"))
	code, body := get(t, opsHandler(Ops{DeadLetters: d}), "/v1/dead-letters")
	var v deadLettersView
	if code != 200 || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("%d %s", code, body)
	}
	if v.Keep != 2 || v.Total["no_reply_target"] != 1 || len(v.Recent) != 1 || v.Recent[0].To != "app:pool" || v.Recent[0].Topic != "t" {
		t.Fatalf("%+v", v)
	}
}

func TestPprof(t *testing.T) {
	if code, _ := get(t, opsHandler(Ops{}), "/debug/pprof/"); code != 404 {
		t.Fatalf("pprof is on by default: %d", code)
	}
	if code, body := get(t, opsHandler(Ops{Pprof: true}), "/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("pprof index: %d", code)
	}
	if code, _ := get(t, opsHandler(Ops{Pprof: true}), "/debug/pprof/profile?seconds=x"); code != 400 {
		t.Fatalf("bad seconds: %d", code)
	}
	// A profile longer than the server's write timeout still arrives.
	h := Handler(Options{Runtime: &fakeSource{}, Health: NewHealth(), Metrics: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler), Ops: Ops{Pprof: true}})
	s, err := Listen("127.0.0.1:0", h, ListenOptions{Logger: slog.New(slog.DiscardHandler), WriteTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(t.Context())
	resp, err := http.Get("http://" + s.Addr().String() + "/debug/pprof/profile?seconds=1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(b) == 0 || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("profile: %d %s %v (%d bytes)", resp.StatusCode, resp.Header.Get("Content-Type"), err, len(b))
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	RegisterBuildInfo(reg, "v1.2.3")
	RegisterBuildInfo(reg, "v1.2.3") // twice: no panic
	got := series(t, reg, "build_info")
	if len(got) != 1 || got["goversion="+goruntime.Version()+",version=v1.2.3"] != 1 {
		t.Fatalf("build_info %v", got)
	}
}

// The page loads nothing from the network: no absolute URL in what it
// serves, and a policy that forbids other origins.
func TestUIPageIsSelfContained(t *testing.T) {
	h := opsHandler(Ops{})
	code, body := get(t, h, "/ui")
	if code != 200 || !strings.Contains(body, `<script src="/ui/app.js"`) {
		t.Fatalf("page %d", code)
	}
	rec := getRec(t, h, "/ui")
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("CSP %q", csp)
	}
	for _, p := range []string{"/ui/app.js", "/ui/style.css"} {
		if code, _ := get(t, h, p); code != 200 {
			t.Fatalf("%s: %d", p, code)
		}
	}
	err := fs.WalkDir(uiFiles, "ui", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := uiFiles.ReadFile(path)
		if err != nil {
			return err
		}
		for _, bad := range []string{"http://", "https://", "//cdn", "@import", "innerHTML", "eval("} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s holds %q", path, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// counting is an instance that counts events, as a pg scope does.
type counting struct {
	viewInst
	n atomic.Uint64
}

func (c *counting) EventCount() uint64 { return c.n.Load() }

func TestUIState(t *testing.T) {
	dead := NewDeadLetters(DeadLetterOptions{Logger: slog.New(slog.DiscardHandler)})
	defer dead.Close()
	node := process.NewNode(process.Options{Name: "n1", Logger: slog.New(slog.DiscardHandler), DeadLetters: dead})
	busy, _ := node.SpawnFunc(func(p *process.Proc) (any, error) { <-p.Context().Done(); return nil, nil }, process.SpawnOptions{})
	defer node.Kill(busy)
	for i := 0; i < 3; i++ {
		node.Send(busy, process.Message{})
	}
	node.Send(process.PID{Node: "n1", ID: 999, Creation: node.Creation()}, process.Message{Topic: "lost"})
	scope := &counting{viewInst: viewInst{pid: process.PID{Node: "n1", ID: 50, Creation: node.Creation()}}}
	src := &fakeSource{infos: []runtime.EntryInfo{
		info("app:svc", "process.lua", runtime.StatusRunning, viewInst{busy}),
		info("app:pg", "pg.scope", runtime.StatusRunning, scope),
		info("app:sup", "supervisor", runtime.StatusRunning, viewInst{process.PID{Node: "n1", ID: 51, Creation: node.Creation()}}),
		info("app:pool", "router.pool", runtime.StatusRunning, viewInst{process.PID{Node: "n1", ID: 52, Creation: node.Creation()}}),
		info("app:def", "process.lua", runtime.StatusFailed, nil),
	}}
	src.infos[4].Err = errors.New("gave up")
	health := NewHealth()
	health.SetCheck("entry.app:def", func() error { return errors.New("entry failed") })
	reloads := reloadList{{Result: runtime.ReloadRejected, Errors: []string{"c.yaml:1:1: bad"}}}
	s := newServer(Options{Runtime: src, Health: health, Metrics: prometheus.NewRegistry(), Ops: Ops{Node: node, DeadLetters: dead, Reloads: reloads}})

	st := s.state()
	if st.Node != "n1" || st.Processes != 1 || st.EntriesTotal != 5 || len(st.Entries) != 5 {
		t.Fatalf("state %+v", st)
	}
	svc := st.Entries[4] // sorted by ID: def, pg, pool, sup, svc
	if svc.ID != "app:svc" || svc.Mailbox == nil || svc.Mailbox.Len != 3 || svc.PID != busy.String() {
		t.Fatalf("entry %+v", svc)
	}
	if st.Entries[0].Error != "gave up" || st.Failing["entry.app:def"] != "entry failed" {
		t.Fatalf("failure not shown: %+v %v", st.Entries[0], st.Failing)
	}
	if len(st.Supervisors) != 1 || len(st.Pools) != 1 || len(st.Scopes) != 1 || st.Supervisors[0].View == nil {
		t.Fatalf("views %+v", st)
	}
	if len(st.Deepest) != 1 || st.Deepest[0].Entry != "app:svc" || st.Deepest[0].Len != 3 {
		t.Fatalf("deepest %+v", st.Deepest)
	}
	if len(st.Reloads) != 1 || st.Reloads[0].Errors[0] != "c.yaml:1:1: bad" {
		t.Fatalf("reloads %+v", st.Reloads)
	}
	if st.DeadLetters == nil || st.DeadLetters.Total["no_process"] != 1 || st.DeadLetters.Recent[0].Topic != "lost" {
		t.Fatalf("dead letters %+v", st.DeadLetters)
	}
	if _, err := json.Marshal(st); err != nil {
		t.Fatal(err)
	}
}

type reloadList []runtime.ReloadAttempt

func (r reloadList) ReloadHistory() []runtime.ReloadAttempt { return r }

func TestEventRate(t *testing.T) {
	r := rates{samples: map[registry.ID][]rateSample{}}
	t0 := time.Now()
	if got := r.rate("s", 10, t0); got != 0 {
		t.Fatalf("one sample: %v", got)
	}
	if got := r.rate("s", 30, t0.Add(2*time.Second)); got != 10 {
		t.Fatalf("20 events in 2s: %v", got)
	}
	// Samples older than the window are dropped: the rate is recent.
	if got := r.rate("s", 30, t0.Add(20*time.Second)); got != 0 {
		t.Fatalf("quiet for 18s: %v", got)
	}
	if got := r.rate("s", 10, t0.Add(21*time.Second)); got != 0 {
		t.Fatalf("a counter that went back (a restart): %v", got)
	}
	r.forget(map[registry.ID]bool{})
	if len(r.samples) != 0 {
		t.Fatal("samples of a gone scope kept")
	}
}

func getRec(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec
}

// With a token set, every /debug/pprof/ handler asks for it: 100
// anonymous heap?gc=1 forced 100 full GCs, and the command line was
// readable.
func TestPprofNeedsTheTokenWhenOneIsSet(t *testing.T) {
	h := opsHandler(Ops{Pprof: true, Token: testToken})
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap?gc=1", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=2",
		"/debug/pprof/symbol", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusUnauthorized || !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%s without the token: %d", path, rec.Code)
		}
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer wrong-token-of-some-length")
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("%s with a wrong token: %d", path, rec.Code)
		}
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s with the token: %d", path, rec.Code)
		}
	}
}
