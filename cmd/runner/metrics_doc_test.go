package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every metric a running node exports is documented in docs/observe.md
// (Go's and the process collector's own aside): an operator reads the page
// to know what a series means.
func TestEveryMetricIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/observe.md")
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, "run", "--log-format", "json", "--http", "127.0.0.1:0", "--cluster-bind", "127.0.0.1:0", "--no-watch", "config.example.yaml")
	base := "http://" + r.httpAddr(t)
	var body string
	r.waitFor(t, "the entries to publish their metrics", func() bool {
		var code int
		code, body = httpGet(t, base+"/metrics")
		return code == 200 && strings.Contains(body, "router_pool_")
	})
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(body, -1) {
		names[m[1]] = true
	}
	if len(names) < 10 {
		t.Fatalf("only %d metrics:\n%s", len(names), body)
	}
	for name := range names {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_") {
			continue
		}
		if !strings.Contains(string(doc), "`"+name+"`") && !strings.Contains(string(doc), "`"+name+"{") {
			t.Errorf("metric %s is not in docs/observe.md", name)
		}
	}
}
