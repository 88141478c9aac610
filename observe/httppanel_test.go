package observe

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/runtime"
)

// The live view's HTTP panel shows the running http.server entries (whose
// views list their routes), not the routes on their own.
func TestStateHTTPPanel(t *testing.T) {
	src := &fakeSource{infos: []runtime.EntryInfo{
		info("app:web", "http.server", runtime.StatusRunning, viewInst{process.PID{Node: "n1", ID: 60}}),
		info("app:get_user", "http.route", runtime.StatusRunning, viewInst{process.PID{Node: "n1", ID: 61}}),
		info("app:old", "http.server", runtime.StatusStopped, nil),
	}}
	s := newServer(Options{Runtime: src, Health: NewHealth(), Metrics: prometheus.NewRegistry()})
	st := s.state()
	if len(st.HTTP) != 1 || st.HTTP[0].ID != "app:web" || st.HTTP[0].View == nil {
		t.Fatalf("http panel %+v", st.HTTP)
	}
	empty := newServer(Options{Runtime: &fakeSource{}, Health: NewHealth(), Metrics: prometheus.NewRegistry()}).state()
	if empty.HTTP == nil {
		t.Fatalf("no server: http is null, want []")
	}
}
