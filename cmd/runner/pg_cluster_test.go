package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

const pgClusterConfig = "cmd/runner/testdata/pgcluster"

// pgNodes returns, for group, how many members each node has as the runner
// at httpAddr sees it (GET /v1/entries/pgc:pg), nil when it cannot tell.
func pgNodes(httpAddr, group string) map[string]int { return scopeNodes(httpAddr, "pgc:pg", group) }

// scopeNodes is pgNodes for the scope of entry id.
func scopeNodes(httpAddr, id, group string) map[string]int {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + httpAddr + "/v1/entries/" + id)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var d struct {
		View struct {
			Groups []struct {
				Name  string
				Nodes map[string]int
			}
		}
	}
	if json.NewDecoder(resp.Body).Decode(&d) != nil {
		return nil
	}
	for _, g := range d.View.Groups {
		if g.Name == group {
			return g.Nodes
		}
	}
	return map[string]int{}
}

// TestPGAcrossRunners runs three runners as a cluster, each with a
// pg.scope, a member of its group and a router.group over it, and the
// test's own process as a fourth node: every node holds every node's
// member; a router.group reaches members on every node; a SIGSTOPped
// runner's member is removed from the others, its view and theirs
// converge after SIGCONT (with a join made meanwhile); a SIGKILLed
// runner's member is gone from every other node.
func TestPGAcrossRunners(t *testing.T) {
	t.Parallel()
	defer http.DefaultClient.CloseIdleConnections()
	secretFile, secret := clusterSecret(t)
	n1, seed, http1 := startNodeOf(t, pgClusterConfig, "n1", "", secretFile)
	n2, _, http2 := startNodeOf(t, pgClusterConfig, "n2", seed, secretFile)
	n3, _, http3 := startNodeOf(t, pgClusterConfig, "n3", seed, secretFile)
	views := map[string]string{"n1": http1, "n2": http2, "n3": http3}
	all := map[string]int{"n1": 1, "n2": 1, "n3": 1}
	waitPG := func(r *runner, what, group string, want map[string]int, nodes ...string) {
		t.Helper()
		r.waitFor(t, what, func() bool {
			for _, n := range nodes {
				if !maps.Equal(pgNodes(views[n], group), want) {
					return false
				}
			}
			return true
		})
	}
	waitPG(n1, "every node to hold every node's member", "g", all, "n1", "n2", "n3")

	self, _ := joinAsT0(t, seed, secret, 3)
	for name, h := range views {
		n1.waitFor(t, name+" to see this node", func() bool { return memberState(t, h, "t0") == "alive" })
	}
	// The router.group of n1, asked by name from this node, answers from
	// a member of each node in turn.
	answered := map[string]bool{}
	for range 3 {
		v, _, err := askName(self, "pgc:route", "n1", "who", nil, 5*time.Second)
		m, _ := v.(map[string]any)
		if err != nil || m == nil {
			t.Fatalf("ask pgc:route@n1: %v %v\n%s", v, err, n1.logs())
		}
		answered[m["node"].(string)] = true
	}
	if len(answered) != 3 {
		t.Fatalf("round robin over the group answered from %v", answered)
	}

	// SIGSTOP n3: the others drop its member; n1's member joins h meanwhile.
	if err := n3.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	waitPG(n1, "n3's member to be gone from n1 and n2", "g", map[string]int{"n1": 1, "n2": 1}, "n1", "n2")
	t.Logf("a SIGSTOPped node's member gone from the others after %s", time.Since(stopped))
	if _, _, err := askName(self, "pgc:member", "n1", "join", "h", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n3.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitPG(n1, "all three to converge after SIGCONT", "g", all, "n1", "n2", "n3")
	waitPG(n1, "n3 to hold the join made while it was stopped", "h", map[string]int{"n1": 1}, "n1", "n2", "n3")

	// SIGKILL n2: its member is gone from every other node.
	if err := n2.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	delete(views, "n2")
	waitPG(n1, "n2's member to be gone from n1 and n3", "g", map[string]int{"n1": 1, "n3": 1}, "n1", "n3")
	gone := time.Since(killed)
	t.Logf("a SIGKILLed node's member gone from every other node after %s", gone)
	if gone > 10*time.Second {
		t.Errorf("a killed node's members were gone after %s", gone)
	}
	answered = map[string]bool{}
	for range 4 {
		v, _, err := askName(self, "pgc:route", "n3", "who", nil, 5*time.Second)
		if err != nil {
			t.Fatalf("ask pgc:route@n3 after n2 died: %v", err)
		}
		answered[v.(map[string]any)["node"].(string)] = true
	}
	if got := slices.Sorted(maps.Keys(answered)); !slices.Equal(got, []string{"n1", "n3"}) {
		t.Fatalf("after n2 died the group answered from %v", got)
	}

	for _, r := range []*runner{n1, n3} {
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := r.wait(t); code != 0 {
			t.Fatalf("exit %d:\n%s", code, r.logs())
		}
	}
}

// A pg.scope that a reload adds joins the cluster as one declared at
// start does: the members of both nodes' new scope meet.
func TestPGScopeAddedByReload(t *testing.T) {
	t.Parallel()
	defer http.DefaultClient.CloseIdleConnections()
	dir := t.TempDir()
	for _, f := range []string{"pg.yaml", "member.lua"} {
		b, err := os.ReadFile(filepath.Join("testdata/pgcluster", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secretFile, _ := clusterSecret(t)
	n1, seed, http1 := startNodeOf(t, dir, "n1", "", secretFile)
	n2, _, http2 := startNodeOf(t, dir, "n2", seed, secretFile)
	both := map[string]int{"n1": 1, "n2": 1}
	for _, h := range []string{http1, http2} {
		n1.waitFor(t, "the declared scope to hold both members", func() bool { return maps.Equal(pgNodes(h, "g"), both) })
	}
	extra := `namespace: pgc
entries:
  - name: extra
    kind: pg.scope
    lifecycle: {auto_start: true}
  - name: extra_member
    kind: process.lua
    source: file://member.lua
    args: [pgc:extra]
    lifecycle: {auto_start: true, depends_on: [extra]}
`
	if err := os.WriteFile(filepath.Join(dir, "extra.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*runner{n1, n2} {
		if err := r.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []string{http1, http2} {
		n1.waitFor(t, "the added scope to hold both members", func() bool {
			return maps.Equal(scopeNodes(h, "pgc:extra", "g"), both)
		})
	}
	for _, r := range []*runner{n1, n2} {
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := r.wait(t); code != 0 {
			t.Fatalf("exit %d:\n%s", code, r.logs())
		}
	}
}
