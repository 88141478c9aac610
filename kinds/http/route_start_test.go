package http_test

import (
	"context"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/internal/testutil"
	httpkind "github.com/proctor-run/proctor/kinds/http"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// an http.route whose server is gone by the time the route starts
// (the server stopped right after, or the route is restarted after its
// server went). The route's start fails after the spawn; it must drop the
// spawner's monitor (registry.StartOptions.MonitorBy, the root's) before
// its process exits, or the root holds that EXIT for an instance it is
// never given (earlyExits); or, if the start succeeds, the route's
// process must end with the server's exit as its reason.
func TestRouteWhoseServerIsGone(t *testing.T) {
	n := start(t, base)
	srv := n.server("app:web")
	node := n.rt.Env().Node
	w, events := kindtest.EventWatcher(t, node)
	// A route whose start fails after its spawn, its server alive (its
	// pattern conflicts with app:any's): no EXIT of its process may reach
	// the monitor.
	if _, err := httpkind.StartRoute(context.Background(), n.rt.Env(), "app:conflict", &httpkind.RouteSpec{Server: "app:web", Path: "/conflict", To: "app:echo"}, registry.StartOptions{MonitorBy: w}); err == nil {
		t.Fatal("a conflicting route started")
	}
	for _, e := range events() {
		t.Errorf("failed start (conflict): the monitor got an EXIT of %s (%v): the root would hold it in earlyExits", e.From, e.Exit.Err)
	}
	_ = node.Kill(srv.PID())
	if done, _, ok := node.Done(srv.PID()); ok {
		<-done
	}
	route, err := httpkind.StartRoute(context.Background(), n.rt.Env(), "app:route", &httpkind.RouteSpec{Server: "app:web", Methods: []string{"GET"}, Path: "/zz/route", To: "app:echo"}, registry.StartOptions{MonitorBy: w})
	if err == nil {
		// Started: its process must go, with a reason, and be the EXIT.
		var got []process.Event
		testutil.EventuallyWithin(t, 10*time.Second, "the route of a gone server to exit", func() bool {
			got = append(got, events()...)
			return len(got) > 0
		})
		if e := got[0]; e.From != route.PID() {
			t.Fatalf("EXIT of %s, want the route's %s", e.From, route.PID())
		}
		t.Logf("route started, then exited: %v", got[0].Exit.Err)
		return
	}
	t.Logf("start failed: %v", err)
	// The start failed: no EXIT of its process may reach the monitor. Its
	// process is stopped before StartRoute returns, so its EXIT, if any,
	// is queued by now.
	for _, e := range events() {
		t.Errorf("the monitor of a route whose start failed got an EXIT of %s (%v): the root would hold it in earlyExits", e.From, e.Exit.Err)
	}
}
