package router_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/proctor-run/proctor/lua/internal/luatest"
	"github.com/proctor-run/proctor/lua/modules/internal/modtest"
)

// TestRouterDocExamples runs the ```lua blocks of docs/lua/router.md: the
// last is the routee (replica.lua) of a scatter/gather pool "replicas";
// every other one is a script that must return "ok" against it.
func TestRouterDocExamples(t *testing.T) {
	blocks := luatest.DocExamples(t, "router.md")
	replica := blocks[len(blocks)-1]
	for i, src := range blocks[:len(blocks)-1] {
		t.Run(fmt.Sprint(i+1), func(t *testing.T) {
			rt, node, stop := modtest.Runtime(t, map[string]string{
				"config.yaml": `
namespace: app
entries:
  - {name: replica, kind: process.lua, source: file://replica.lua}
  - {name: main, kind: process.lua, source: file://main.lua}
  - name: replicas
    kind: router.pool
    lifecycle: {auto_start: true}
    routee: replica
    size: 3
    strategy: scatter_gather_first_completed
    timeout: 2s
`,
				"replica.lua": replica,
				"main.lua":    src,
			})
			defer stop()
			if e := modtest.RunMain(t, rt, node, 30*time.Second); e.Err != nil || e.Value != "ok" {
				t.Fatalf("example %d: %v %v", i+1, e.Value, e.Err)
			}
		})
	}
}
