package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proctor-run/proctor/cluster"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

const clusterTestConfig = "cmd/runner/testdata/cluster"

// clusterSecret writes a secret file for the test's nodes.
func clusterSecret(t *testing.T) (path string, secret []byte) {
	secret = []byte("a cluster secret for the runner tests")
	path = filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, append(secret, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, secret
}

// startNode starts `runner run` as cluster node name, joining seed (none
// for the first), and returns it with its gossip and HTTP addresses.
func startNode(t *testing.T, name, seed, secretFile string, extra ...string) (r *runner, gossip, httpAddr string) {
	t.Helper()
	return startNodeOf(t, clusterTestConfig, name, seed, secretFile, extra...)
}

// startNodeOf is startNode with another configuration.
func startNodeOf(t *testing.T, config, name, seed, secretFile string, extra ...string) (r *runner, gossip, httpAddr string) {
	t.Helper()
	args := []string{"run", "--log-format", "json", "--no-watch", "--node", name, "--http", "127.0.0.1:0",
		"--cluster-bind", "127.0.0.1:0", "--cluster-secret-file", secretFile}
	if seed != "" {
		args = append(args, "--cluster-join", seed)
	}
	r = start(t, append(append(args, extra...), config)...)
	select {
	case httpAddr = <-r.addr:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no HTTP address logged:\n%s", name, r.logs())
	}
	r.waitFor(t, name+" to log its cluster address", func() bool {
		gossip = logged(r, "cluster: started", "gossip")
		return gossip != ""
	})
	return r, gossip, httpAddr
}

// logged returns attribute attr of the first JSON log line of r whose
// message is msg.
func logged(r *runner, msg, attr string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, line := range r.stderr {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			s, _ := m[attr].(string)
			return s
		}
	}
	return ""
}

// memberState returns node's state as the runner at httpAddr sees it
// (GET /v1/cluster), "" when it does not know it.
func memberState(t *testing.T, httpAddr, node string) string {
	_, body := httpGet(t, "http://"+httpAddr+"/v1/cluster")
	var st struct {
		Members []struct{ Name, State string }
	}
	_ = json.Unmarshal([]byte(body), &st)
	for _, m := range st.Members {
		if m.Name == node {
			return m.State
		}
	}
	return ""
}

// joinAsT0 makes the test's process node t0 of the cluster of seed and
// waits until it sees others other nodes. The node leaves at the end of
// the test.
func joinAsT0(t *testing.T, seed string, secret []byte, others int) (*process.Node, *cluster.Cluster) {
	t.Helper()
	self := process.NewNode(process.Options{Name: "t0", Logger: slog.New(slog.DiscardHandler)})
	c, err := cluster.Start(cluster.Options{Node: self, Bind: "127.0.0.1:0", Join: []string{seed}, Secret: secret,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitMembers(ctx, others); err != nil {
		t.Fatal(err)
	}
	return self, c
}

// askName asks name@node from the test's own node.
func askName(n *process.Node, name, node, topic string, payload any, timeout time.Duration) (any, process.PID, error) {
	c := process.NewCall()
	if err := n.SendName(node, name, c.MessageWithin(process.Message{Topic: topic, Payload: payload}, timeout)); err != nil {
		_, err = c.Abandon(err)
		return nil, process.PID{}, err
	}
	r, err := c.Wait(timeout, nil)
	if err != nil {
		return nil, process.PID{}, err
	}
	return r.Value, r.From, r.Err
}

// TestClusterOfRunners runs three runner processes as a cluster, with the
// test's own process as a fourth node (Go API), and checks what crosses
// nodes: name@node in Go and Lua, asks, monitors and links, terminate; a
// SIGSTOPped node is seen gone and comes back on SIGCONT; a SIGKILLed
// node is gone from every other node within the 5 s target.
func TestClusterOfRunners(t *testing.T) {
	t.Parallel()
	defer http.DefaultClient.CloseIdleConnections()
	secretFile, secret := clusterSecret(t)
	n1, seed, http1 := startNode(t, "n1", "", secretFile)
	n2, _, http2 := startNode(t, "n2", seed, secretFile)
	n3, _, http3 := startNode(t, "n3", seed, secretFile)
	_ = n1

	// The test's own node.
	self, c := joinAsT0(t, seed, secret, 3)
	views := map[string]string{"n1": http1, "n2": http2, "n3": http3}
	for name, h := range views {
		n2.waitFor(t, name+" to see every other node", func() bool {
			for _, other := range []string{"n1", "n2", "n3", "t0"} {
				if other != name && memberState(t, h, other) != "alive" {
					return false
				}
			}
			return true
		})
	}

	// Go: name@node, without and with a round trip.
	v, from, err := askName(self, "cl:svc", "n2", "who", nil, 5*time.Second)
	if err != nil || from.Node != "n2" {
		t.Fatalf("ask cl:svc@n2: %v %v %v", v, from, err)
	}
	svc3, err := self.Resolve("cl:svc@n3")
	if err != nil || svc3.Node != "n3" {
		t.Fatalf("resolve cl:svc@n3: %v %v", svc3, err)
	}
	if _, err := self.Resolve("nobody@n3"); !errors.Is(err, process.ErrNameNotFound) {
		t.Fatalf("resolve nobody@n3: %v", err)
	}
	// Lua: n2's script asks cl:svc@n3 by name.
	v, _, err = askName(self, "cl:svc", "n2", "relay", map[string]any{"dest": "cl:svc@n3", "topic": "who"}, 5*time.Second)
	if m, _ := v.(map[string]any); err != nil || m["pid"] != svc3.String() {
		t.Fatalf("relay n2 -> cl:svc@n3: %v %v", v, err)
	}
	// Lua: the rest of the checks, from a fourth runner against n3.
	check := start(t, "run", "--log-format", "json", "--no-watch", "--node", "n4", "--cluster-bind", "127.0.0.1:0",
		"--cluster-secret-file", secretFile, "--cluster-join", seed, "--main", "cl:check", clusterTestConfig, "--", "n3")
	if code := check.wait(t); code != 0 || !strings.Contains(check.stdout.String(), "check ok against n3") {
		t.Fatalf("cl:check exit %d:\n%s\n%s", code, check.stdout.String(), check.logs())
	}

	// A monitor from this node to n3's service, then n3 stops answering.
	watcher, events := spawnWatcher(t, self)
	if err := self.Monitor(watcher, svc3); err != nil {
		t.Fatal(err)
	}
	if _, _, err := self.Ask(svc3, process.Message{Topic: "who"}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n3.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	n2.waitFor(t, "n3 to be seen dead", func() bool { _, ok := c.Membership().Member("n3"); return !ok })
	t.Logf("SIGSTOPped node seen dead after %s", time.Since(stopped))
	select {
	case e := <-events:
		if e.From != svc3 || !errors.Is(e.Exit.Err, process.ErrNoConnection) {
			t.Fatalf("monitor event %+v", e)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no EXIT for the monitor of a process on the stopped node")
	}
	if err := self.Send(svc3, process.Message{Topic: "note"}); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send to the stopped node: %v", err)
	}
	if err := n3.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	n2.waitFor(t, "n3 to come back", func() bool {
		_, _, err := self.Ask(svc3, process.Message{Topic: "who"}, time.Second)
		return err == nil
	})

	// SIGKILL n2: every other node sees it gone.
	if err := n2.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var mu sync.Mutex
	seen := map[string]time.Duration{}
	var wg sync.WaitGroup
	observe := func(who string, gone func() bool) {
		defer wg.Done()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if gone() {
				mu.Lock()
				seen[who] = time.Since(killed)
				mu.Unlock()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wg.Add(3)
	go observe("t0", func() bool { _, ok := c.Membership().Member("n2"); return !ok })
	go observe("n1", func() bool { return memberState(t, http1, "n2") == "dead" })
	go observe("n3", func() bool { return memberState(t, http3, "n2") == "dead" })
	wg.Wait()
	var worst time.Duration
	for _, who := range []string{"t0", "n1", "n3"} {
		d, ok := seen[who]
		if !ok {
			t.Fatalf("%s never saw the killed n2 gone:\n%s", who, n1.logs())
		}
		worst = max(worst, d)
	}
	t.Logf("SIGKILLed node gone from every node after %s (%v)", worst, seen)
	if worst > 5*time.Second {
		t.Errorf("a killed node was gone from every node after %s; the target is 5s", worst)
	}
	if _, _, err := askName(self, "cl:svc", "n2", "who", nil, 5*time.Second); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("ask of the killed node: %v", err)
	}

	// The others leave gracefully on SIGTERM.
	for _, r := range []*runner{n1, n3} {
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := r.wait(t); code != 0 {
			t.Fatalf("exit %d:\n%s", code, r.logs())
		}
	}
	testutil.EventuallyWithin(t, 20*time.Second, "n1 and n3 to have left", func() bool {
		for _, m := range c.Membership().Known() {
			if (m.Name == "n1" || m.Name == "n3") && m.State != cluster.StateLeft {
				return false
			}
		}
		return true
	})
}

// spawnWatcher starts a process on n that hands its events to a channel.
func spawnWatcher(t *testing.T, n *process.Node) (process.PID, <-chan process.Event) {
	t.Helper()
	events := make(chan process.Event, 16)
	pid, err := n.SpawnFunc(func(p *process.Proc) (any, error) {
		for {
			if e, ok := p.TryEvent(); ok {
				events <- e
				continue
			}
			p.Arm()
			if p.PendingEvents() > 0 {
				p.Disarm()
				continue
			}
			select {
			case <-p.Context().Done():
				return nil, nil
			case <-p.Wake():
			}
		}
	}, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Kill(pid) })
	return pid, events
}

// The demo runs as a cluster: two more nodes of config.example.yaml start
// on the same machine beside the first (README), and every node is ready;
// each holds the indexers of all three in its pg scope, and the client of
// each reports answers from indexers on the other nodes.
func TestDemoAsCluster(t *testing.T) {
	t.Parallel()
	defer http.DefaultClient.CloseIdleConnections()
	secretFile, _ := clusterSecret(t)
	nodes := map[string]*runner{}
	https := map[string]string{}
	var seed string
	for _, name := range []string{"d1", "d2", "d3"} {
		args := []string{"run", "--log-format", "json", "--no-watch", "--node", name, "--http", "127.0.0.1:0",
			"--cluster-bind", "127.0.0.1:0", "--cluster-secret-file", secretFile}
		if seed != "" {
			args = append(args, "--cluster-join", seed)
		}
		r := start(t, append(args, "config.example.yaml")...)
		select {
		case https[name] = <-r.addr:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no HTTP address logged:\n%s", name, r.logs())
		}
		r.waitFor(t, name+" to log its cluster address", func() bool {
			if seed == "" {
				seed = logged(r, "cluster: started", "gossip")
			}
			return logged(r, "cluster: started", "gossip") != ""
		})
		nodes[name] = r
	}
	for name, h := range https {
		nodes[name].waitFor(t, name+" to be ready and see the others", func() bool {
			code, _ := httpGet(t, "http://"+h+"/readyz")
			for _, other := range []string{"d1", "d2", "d3"} {
				if other != name && memberState(t, h, other) != "alive" {
					return false
				}
			}
			return code == 200
		})
	}
	every := map[string]int{"d1": 2, "d2": 2, "d3": 2}
	for name, h := range https {
		nodes[name].waitFor(t, name+" to hold every node's indexers", func() bool {
			return maps.Equal(scopeNodes(h, "app:pg", "indexers"), every)
		})
	}
	for name, r := range nodes {
		r.waitFor(t, name+"'s client to hear from indexers on every node", func() bool {
			return maps.Equal(lastRound(r), map[string]float64{"d1": 2, "d2": 2, "d3": 2})
		})
	}
	for name, r := range nodes {
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := r.wait(t); code != 0 {
			t.Fatalf("%s: exit %d:\n%s", name, code, r.logs())
		}
	}
}

// lastRound returns which nodes answered in the last round the demo
// client of r logged.
func lastRound(r *runner) map[string]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.stderr) - 1; i >= 0; i-- {
		var m struct {
			Msg        string             `json:"msg"`
			AnsweredBy map[string]float64 `json:"answered_by"`
		}
		if json.Unmarshal([]byte(r.stderr[i]), &m) == nil && m.Msg == "round" {
			return m.AnsweredBy
		}
	}
	return nil
}
