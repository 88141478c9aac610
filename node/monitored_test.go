package node_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/node"
	"github.com/proctor-run/proctor/registry"
)

// everyKind has an auto-started entry of each kind that runs as a service.
const everyKind = `namespace: app
entries:
  - {name: pg, kind: pg.scope, lifecycle: {auto_start: true}}
  - {name: worker, kind: process.lua, source: file://w.lua}
  - {name: svc, kind: process.lua, source: file://w.lua, lifecycle: {auto_start: true}}
  - {name: pool, kind: router.pool, routee: worker, size: 2, lifecycle: {auto_start: true}}
  - {name: group, kind: router.group, scope: pg, group: g, strategy: round_robin, timeout: 1s, lifecycle: {auto_start: true}}
  - {name: sup, kind: supervisor, children: [{id: a, process: worker}], lifecycle: {auto_start: true}}
  - {name: dyn, kind: supervisor.dynamic, lifecycle: {auto_start: true}}
  - {name: shards, kind: supervisor.partition, process: worker, partitions: 2, lifecycle: {auto_start: true}}
  - {name: web, kind: http.server, listen: "127.0.0.1:0", lifecycle: {auto_start: true}}
  - {name: route, kind: http.route, server: web, path: /x, to: svc, lifecycle: {auto_start: true}}
`

// Every kind Proctor ships spawns its instance's process monitored by the
// root supervisor (registry.StartOptions.MonitorBy): an instance that
// fails the moment its start returns is seen with its own exit, not as
// "no such process" (a script whose main raised at once was, in a
// clean-clone CI run of TestReloadSaysWhenNewCodeCrashes).
func TestEveryKindIsMonitoredByTheRootFromItsSpawn(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := configDir(t, map[string]string{"app.yaml": everyKind, "w.lua": `return { main = function() process.inbox():receive() end }`})
	var logs testutil.SyncBuffer
	n, err := node.Start(context.Background(), node.Options{Paths: []string{dir}, Name: "monitored", Logger: slog.New(slog.NewTextHandler(&logs, nil)), Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(context.Background())
	covered := map[string]bool{}
	for _, info := range n.Runtime().Entries() {
		inst, ok := n.Runtime().Instance(info.Entry.ID)
		if !ok {
			continue
		}
		covered[info.Entry.Kind] = true
		if monitored, alive := n.Process().Monitors(n.Root().PID(), inst.PID()); !monitored || !alive {
			t.Errorf("%s (%s): monitored by the root %v, alive %v", info.Entry.ID, info.Entry.Kind, monitored, alive)
		}
	}
	for _, name := range n.Kinds().Names() {
		k, _ := n.Kinds().Kind(name)
		if _, ok := k.(registry.Starter); ok && !covered[name] {
			t.Errorf("kind %s runs as a service but has no running entry in this test", name)
		}
	}
	if strings.Contains(logs.String(), "did not have the root monitor") {
		t.Errorf("the root monitored late:\n%s", logs.String())
	}
}
