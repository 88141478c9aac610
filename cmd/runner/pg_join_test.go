package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pgJoinConfig writes a configuration in which every node has two members
// of group "members" (joined in init, so they are members once started)
// and a --main that logs how many members the router over the group sees
// at once, exiting with an error unless it sees want.
func pgJoinConfig(t *testing.T, want int) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"app.yaml": `namespace: pgj
entries:
  - name: pg
    kind: pg.scope
    lifecycle: {auto_start: true}
  - {name: member, kind: process.lua, source: file://member.lua}
  - name: members
    kind: supervisor
    lifecycle: {auto_start: true, depends_on: [pg]}
    children: [{id: m1, process: member}, {id: m2, process: member}]
  - name: route
    kind: router.group
    lifecycle: {auto_start: true, depends_on: [pg]}
    scope: pg
    group: members
    strategy: round_robin
  - {name: check, kind: process.lua, source: file://check.lua}
`,
		"member.lua": `local pg = require("pg")
return { init = function()
  assert(assert(pg.open("pgj:pg")):join("members"))
end, main = function()
  local inbox = process.inbox()
  while true do local m = inbox:receive(); m:reply("ok") end
end }
`,
		"check.lua": `local router = require("router")
return { main = function()
  local n = router.size("pgj:route")
  log.info("members at start", {size = n})
  assert(n == ` + strconv.Itoa(want) + `, "members at start: " .. tostring(n))
end }
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestJoiningNodeStartsWithThePeersMembers: a node that joins a cluster
// starts its --main once its pg scope holds the members of the nodes
// already there (docs/cluster.md: the node waits for its join "so services
// that talk to other nodes find them"), not ~100 ms later; the pg
// messages that reach it before its scope runs raise no dead letter; and
// its clean leave logs no lost connection.
//
// Not parallel: it counts dead letters, and waits on memberlist rounds.
// A joiner gets the start notices still queued on its seed, relays of
// nodes that left before it joined; they made it send those nodes
// pg.sync and pg.ops (dead letters "unreachable", 7 of 8 runs under
// load) until pgdist held the answer to a notice back until its node joins.
func TestJoiningNodeStartsWithThePeersMembers(t *testing.T) {
	secretFile, _ := clusterSecret(t)
	dir := pgJoinConfig(t, 4)
	n1, seed, _ := startNodeOf(t, dir, "n1", "", secretFile)
	n1.waitFor(t, "n1 to start", func() bool { return strings.Contains(n1.logs(), `"msg":"started"`) })
	for _, name := range []string{"n2", "n3", "n4"} {
		r, _, _ := startNodeOf(t, dir, name, seed, secretFile, "--main", "pgj:check")
		if code := r.wait(t); code != 0 || !strings.Contains(r.logs(), `"msg":"members at start","entry":"pgj:check"`) {
			t.Fatalf("%s: exit %d:\n%s", name, code, r.logs())
		}
		// The next node joins a cluster that knows this one left: one that
		// joined while the leave was still on its way (at load 9-17) sent
		// pg ops to the node that had gone, a dead letter of another story.
		n1.waitFor(t, "n1 to see "+name+" leave", func() bool {
			for _, line := range strings.Split(n1.logs(), "\n") {
				if strings.Contains(line, `"msg":"cluster: node gone"`) && strings.Contains(line, `"peer":"`+name+`"`) {
					return true
				}
			}
			return false
		})
		// The seed's hello or state reaching the scope before it runs
		// is the protocol at work, not a dead letter.
		// Nor is its clean leave (--main returned) news: the peer closing
		// the connection, memberlist's sends on its closed sockets.
		for _, line := range strings.Split(r.logs(), "\n") {
			if strings.Contains(line, "dead letter") && strings.Contains(line, `"pg.`) ||
				strings.Contains(line, "transport: connection lost") ||
				strings.Contains(line, "use of closed network connection") && !strings.Contains(line, `"level":"DEBUG"`) {
				t.Errorf("%s: %s", name, line)
			}
		}
	}
	n1.cmd.Process.Signal(os.Interrupt)
	n1.wait(t)
}
