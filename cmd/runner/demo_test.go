package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDemoUsesEveryKind runs one round of the demo's client against
// config.example.yaml: a hedged read through the scatter/gather pool, a
// search through the router.group over pg members started by a supervisor,
// a keyed call to a partition worker and a dynamic child; every indexer
// answers once.
func TestDemoUsesEveryKind(t *testing.T) {
	t.Parallel()
	r := start(t, "run", "--log-format", "json", "--no-watch", "--main", "app:client", "config.example.yaml", "--", "1")
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, r.logs())
	}
	var report struct {
		Replicas string  `json:"replicas"`
		Search   string  `json:"search"`
		Shard    string  `json:"shard"`
		Sessions float64 `json:"sessions"`
		Indexers float64 `json:"indexers"`
		// The node of each indexer that answered: this one, twice.
		AnsweredBy map[string]float64 `json:"answered_by"`
	}
	out := strings.TrimSpace(r.stdout.String())
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	for _, n := range report.AnsweredBy {
		if n != 2 {
			t.Fatalf("answered by %v", report.AnsweredBy)
		}
	}
	if report.Replicas != "Ada" || (report.Search != "a" && report.Search != "b") ||
		report.Shard != "customer-7" || report.Sessions != 1 || report.Indexers != 2 || len(report.AnsweredBy) != 1 {
		t.Fatalf("report %+v", report)
	}
}
