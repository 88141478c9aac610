package http_test

import (
	"strings"
	"testing"

	"github.com/proctor-run/proctor/internal/testutil"
	httpkind "github.com/proctor-run/proctor/kinds/http"
)

// A route removed by a reload finishes the requests it is serving before
// it stops, so the target it alone kept running (echo is no service: the
// route's `to` starts it) is not stopped under them: the request in
// flight gets its reply, not a 503 "stopped before it replied".
func TestRemovedRouteFinishesItsRequests(t *testing.T) {
	cfg := strings.Replace(base, "timeout: 300ms", "timeout: 10s", 1)
	n := start(t, cfg)
	c := client()
	defer c.CloseIdleConnections()
	type answer struct {
		status int
		body   string
	}
	got := make(chan answer, 1)
	go func() { s, _, b := get(t, c, "GET", n.url("/sleep"), ""); got <- answer{s, b} }()
	testutil.Eventually(t, "the request in flight", func() bool {
		v := n.server("app:web").View().(httpkind.ServerView)
		return len(v.Routes) == 1 && v.Routes[0].Pending == 1
	})
	sum := n.reload(cfg[:strings.Index(cfg, "  - name: any")])
	if len(sum.Removed) != 1 {
		t.Fatalf("reload: %+v", sum)
	}
	if a := <-got; a.status != 200 || a.body != "slept" {
		t.Errorf("the request in flight when its route was removed: %d %s, want 200 slept", a.status, a.body)
	}
	if _, running := n.rt.Instance("app:echo"); running {
		t.Errorf("app:echo still runs after the route that started it was removed")
	}
}
