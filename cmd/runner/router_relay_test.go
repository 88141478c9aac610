package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRouterGroupAskedFromAMembersNode: a router.group on n1 whose group
// has members on the caller's node n2, asked from n2 by name
// (process.ask("pgj:route@n1", …)), answers every ask — n1 forwards the ask
// to n2's members on the caller's behalf (a relayed send), which n2 once
// refused as a forgery, closing the connection (issue 23).
func TestRouterGroupAskedFromAMembersNode(t *testing.T) {
	t.Parallel()
	secretFile, _ := clusterSecret(t)
	dir := pgJoinConfig(t, 4)
	ask := `return { main = function()
  for i = 1, 8 do
    local v, err = process.ask("pgj:route@n1", "who", nil, "5s")
    assert(v == "ok", "ask " .. i .. ": " .. tostring(err))
  end
  log.info("every ask answered")
end }
`
	if err := os.WriteFile(filepath.Join(dir, "ask.lua"), []byte(ask), 0o644); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app.yaml")
	b, err := os.ReadFile(app)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(app, append(b, []byte("  - {name: ask, kind: process.lua, source: file://ask.lua}\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	n1, seed, _ := startNodeOf(t, dir, "n1", "", secretFile)
	n1.waitFor(t, "n1 to start", func() bool { return strings.Contains(n1.logs(), `"msg":"started"`) })
	// n2's --main runs once its scope holds n1's members too (the join
	// wait), so the round robin covers members of both nodes.
	n2, _, _ := startNodeOf(t, dir, "n2", seed, secretFile, "--main", "pgj:ask")
	if code := n2.wait(t); code != 0 || !strings.Contains(n2.logs(), "every ask answered") {
		t.Fatalf("n2: exit %d:\n%s\nn1:\n%s", code, n2.logs(), n1.logs())
	}
	for _, line := range strings.Split(n2.logs()+n1.logs(), "\n") {
		if strings.Contains(line, "frame refused") || strings.Contains(line, "bad input") {
			t.Errorf("%s", line)
		}
	}
	n1.cmd.Process.Signal(os.Interrupt)
	n1.wait(t)
}
