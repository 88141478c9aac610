package http_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/internal/testutil"
	httpkind "github.com/proctor-run/proctor/kinds/http"
	"github.com/proctor-run/proctor/registry"
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

// A route finds its target anew for each request, so a restart of the
// target (its code changed, no upgrade) does not restart the route: the
// route is never out of its server's table, and a request meanwhile is
// never a 404 "no route".
func TestTargetRestartKeepsTheRoute(t *testing.T) {
	n := start(t, base)
	c := client()
	defer c.CloseIdleConnections()
	before, ok := n.rt.Instance("app:any")
	if !ok {
		t.Fatal("app:any is not running")
	}
	n.write("echo.lua", echoLua+"\n-- changed\n")
	sum := n.reload(base)
	if !slices.Contains(sum.Updated, registry.ID("app:echo")) {
		t.Fatalf("the target was not updated: %+v", sum)
	}
	if slices.Contains(sum.Restarted, registry.ID("app:any")) {
		t.Errorf("the route restarted with its target: %+v", sum)
	}
	if after, _ := n.rt.Instance("app:any"); after != before {
		t.Errorf("the route's instance changed")
	}
	if s, _, b := get(t, c, "GET", n.url("/string"), ""); s != 200 || b != "plain GET" {
		t.Errorf("after: %d %s", s, b)
	}
}
