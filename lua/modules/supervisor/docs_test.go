package supervisor_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/proctor-run/proctor/lua/internal/luatest"
	"github.com/proctor-run/proctor/lua/modules/internal/modtest"
)

// docsConfig is what docs/lua/supervisor.md's examples run against.
const docsConfig = `
namespace: app
entries:
  - {name: session, kind: process.lua, source: file://session.lua}
  - {name: worker, kind: process.lua, source: file://worker.lua}
  - {name: shard, kind: process.lua, source: file://shard.lua}
  - {name: main, kind: process.lua, source: file://main.lua}
  - {name: sessions, kind: supervisor.dynamic, lifecycle: {auto_start: true}}
  - name: core
    kind: supervisor
    lifecycle: {auto_start: true}
    children:
      - {id: cache, process: worker, args: [cache]}
      - {id: jobs, process: worker, args: [jobs], restart: transient}
  - {name: shards, kind: supervisor.partition, lifecycle: {auto_start: true}, process: shard, partitions: 4}
`

const docsSession = `
return {
  init = function(user) return {user = user} end,
  main = function(state)
    local inbox = process.inbox()
    while true do inbox:receive():reply(state) end
  end,
}`

const docsShard = `
return { main = function()
  local store, inbox = {}, process.inbox()
  while true do
    local msg = inbox:receive()
    local p = msg:payload()
    if msg:topic() == "put" then store[p.key] = p.value
    elseif msg:topic() == "get" then msg:reply(store[p.key]) end
  end
end }`

// TestSupervisorDocExamples runs every ```lua block of
// docs/lua/supervisor.md as the script of app:main; each must return "ok".
func TestSupervisorDocExamples(t *testing.T) {
	for i, src := range luatest.DocExamples(t, "supervisor.md") {
		t.Run(fmt.Sprint(i+1), func(t *testing.T) {
			rt, node, stop := modtest.Runtime(t, map[string]string{
				"config.yaml": docsConfig, "session.lua": docsSession, "worker.lua": supWorker,
				"shard.lua": docsShard, "main.lua": src,
			})
			defer stop()
			if e := modtest.RunMain(t, rt, node, 30*time.Second); e.Err != nil || e.Value != "ok" {
				t.Fatalf("example %d: %v %v", i+1, e.Value, e.Err)
			}
		})
	}
}
