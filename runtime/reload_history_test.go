package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/registry"
)

func TestReloadHistory(t *testing.T) {
	r := newReloadEnv(t, map[string]string{"c.yaml": "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {auto_start: true}}\n"})
	if h := r.rt.ReloadHistory(); len(h) != 0 {
		t.Fatalf("history before any reload: %+v", h)
	}
	before := time.Now()
	r.write("c.yaml", "namespace: a\nentries:\n  - {name: x, kind: test.svc, lifecycle: {auto_start: true}}\n  - {name: y, kind: test.svc, lifecycle: {auto_start: true}}\n")
	r.apply()
	r.write("c.yaml", "namespace: a\nentries:\n  - {name: x, kind: test.svc, sise: 2, lifecycle: {auto_start: true}}\n  - {name: y, kind: tset.svc}\n")
	if _, _, err := r.rt.Reload(context.Background(), r.loader, r.dir); err == nil {
		t.Fatal("reload of an invalid config applied")
	}
	h := r.rt.ReloadHistory()
	if len(h) != 2 {
		t.Fatalf("history %+v", h)
	}
	ok := h[0]
	if ok.Result != ReloadApplied || ok.Added != 1 || ok.Unchanged != 1 || ok.Time.Before(before) || len(ok.Errors) != 0 {
		t.Fatalf("applied attempt %+v", ok)
	}
	bad := h[1]
	if bad.Result != ReloadRejected || len(bad.Errors) != 2 || !strings.Contains(bad.Errors[0], `sise: unknown field`) || bad.Time.Before(ok.Time) {
		t.Fatalf("rejected attempt %+v", bad)
	}
	// The caller's copy is its own.
	h[0].Result = "changed"
	if r.rt.ReloadHistory()[0].Result != ReloadApplied {
		t.Fatal("history shared with a caller")
	}
}

func TestReloadHistoryIsBounded(t *testing.T) {
	h := newReloadHistory(prometheus.NewRegistry(), 4)
	for i := 0; i < 7; i++ {
		h.record(ReloadAttempt{Added: i, Result: ReloadApplied})
	}
	got := *h.list.Load()
	if len(got) != 4 || got[0].Added != 3 || got[3].Added != 6 {
		t.Fatalf("history %+v", got)
	}
	errs := make(config.Errors, reloadErrorsKept+10)
	for i := range errs {
		errs[i] = &registry.FieldError{Field: "f", Msg: "bad"}
	}
	if kept := rejectedAttempt(errs).Errors; len(kept) != reloadErrorsKept+1 || kept[reloadErrorsKept] != "… and 10 more" {
		t.Fatalf("%d errors kept, last %q", len(kept), kept[len(kept)-1])
	}
}
