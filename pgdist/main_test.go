package pgdist

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/cluster"
	"github.com/proctor-run/proctor/cluster/clustertest"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testutil.IgnoreMemberlistProbe)
}

// scopeID is the entry of every test scope.
const scopeID = "test:pg"

// pgCluster is an in-process cluster (clustertest: real memberlist and TCP
// on 127.0.0.1) with a distributed scope of scopeID on every node.
type pgCluster struct {
	t    testing.TB
	c    *clustertest.Cluster
	spec pgscope.Spec
	logs *testutil.SyncBuffer

	mu    sync.Mutex
	nodes map[string]*pgNode
}

// pgNode is one node of a pgCluster.
type pgNode struct {
	name   string
	cl     *cluster.Cluster
	d      *Distributor
	env    *registry.Env
	reg    *prometheus.Registry
	health *checks
	s      *pgscope.Scope
	procs  []process.PID
}

// checks records the health checks a scope registers.
type checks struct {
	mu sync.Mutex
	m  map[string]func() error
}

func (h *checks) SetCheck(name string, fn func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m[name] = fn
}

func (h *checks) RemoveCheck(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, name)
}

func (h *checks) get(name string) func() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[name]
}

// newPGCluster starts a node with a scope for each name; mod adjusts the
// scopes' spec.
func newPGCluster(t testing.TB, mod func(*pgscope.Spec), names ...string) *pgCluster {
	t.Helper()
	spec := pgscope.DefaultSpec()
	if mod != nil {
		mod(&spec)
	}
	pc := &pgCluster{t: t, spec: spec, nodes: map[string]*pgNode{}, logs: &testutil.SyncBuffer{}}
	pc.c = clustertest.New(t, clustertest.Options{})
	t.Cleanup(pc.close)
	for _, n := range names {
		pc.start(n)
	}
	pc.c.Converged()
	return pc
}

func (pc *pgCluster) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(pc.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// start starts node name (a new incarnation when it ran before) and its
// scope.
func (pc *pgCluster) start(name string) *pgNode {
	pc.t.Helper()
	cl := pc.c.Start(name)
	n := &pgNode{name: name, cl: cl, reg: prometheus.NewRegistry(), health: &checks{m: map[string]func() error{}}}
	var err error
	n.d, err = New(cl.Node(), FromCluster(cl), Options{Logger: pc.logger().With("node", name), Metrics: n.reg})
	if err != nil {
		pc.t.Fatal(err)
	}
	n.env = &registry.Env{Node: cl.Node(), Logger: pc.logger().With("node", name), Metrics: n.reg, Health: n.health}
	pc.mu.Lock()
	pc.nodes[name] = n
	pc.mu.Unlock()
	pc.startScope(name)
	return n
}

// startScope starts the scope of node name (again).
func (pc *pgCluster) startScope(name string) *pgscope.Scope {
	pc.t.Helper()
	n := pc.node(name)
	s, err := pgscope.NewWithOptions(n.env, scopeID, pc.spec, pgscope.Options{Distributor: n.d})
	if err != nil {
		pc.t.Fatal(err)
	}
	pc.mu.Lock()
	n.s = s
	pc.mu.Unlock()
	return s
}

// stopScope stops the scope of node name.
func (pc *pgCluster) stopScope(name string) {
	pc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pc.node(name).s.Stop(ctx); err != nil {
		pc.t.Fatal(err)
	}
}

// stop stops node name gracefully: its scope, its processes, then the
// node leaves the cluster.
func (pc *pgCluster) stop(name string) {
	pc.t.Helper()
	pc.mu.Lock()
	n := pc.nodes[name]
	delete(pc.nodes, name)
	pc.mu.Unlock()
	pc.shutdown(n)
	pc.c.Stop(name)
}

func (pc *pgCluster) shutdown(n *pgNode) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n.s != nil {
		_ = n.s.Stop(ctx)
	}
	for _, p := range n.procs {
		_, _ = n.cl.Node().Stop(ctx, p)
	}
	n.d.Close()
}

func (pc *pgCluster) close() {
	pc.mu.Lock()
	nodes := pc.nodes
	pc.nodes = map[string]*pgNode{}
	pc.mu.Unlock()
	for _, n := range nodes {
		pc.shutdown(n)
	}
	if pc.t.Failed() {
		pc.t.Logf("logs:\n%s", tail(pc.logs.String(), 200))
	}
}

func tail(s string, lines int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

func (pc *pgCluster) node(name string) *pgNode {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	n := pc.nodes[name]
	if n == nil {
		pc.t.Fatalf("no node %s", name)
	}
	return n
}

func (pc *pgCluster) scope(name string) *pgscope.Scope {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.nodes[name].s
}

// echo is a member process: it answers every ask with its node and PID,
// or rejects it with a not_found error whose message its payload names
// ({"fail": "message"}), or answers after a while ({"sleep": "1s"}).
type echo struct{}

func (echo) Receive(c process.Context, m process.Message) {
	if !m.CanReply() {
		return
	}
	if p, ok := m.Payload.(map[string]any); ok {
		if msg, ok := p["fail"].(string); ok {
			_, _ = c.Reply(&m, nil, value.NewError(value.KindNotFound, "%s", msg))
			return
		}
		if d, ok := p["sleep"].(string); ok {
			dur, _ := time.ParseDuration(d)
			time.Sleep(dur)
		}
	}
	_, _ = c.Reply(&m, map[string]any{"node": c.Node().Name(), "pid": c.Self().String()}, nil)
}

// spawn starts a member process on node name.
func (pc *pgCluster) spawn(name string) process.PID {
	pc.t.Helper()
	n := pc.node(name)
	pid, err := n.cl.Node().Spawn(echo{}, process.SpawnOptions{})
	if err != nil {
		pc.t.Fatal(err)
	}
	pc.mu.Lock()
	n.procs = append(n.procs, pid)
	pc.mu.Unlock()
	return pid
}

// kill stops a process and waits until it is gone.
func (pc *pgCluster) kill(pid process.PID) {
	pc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := pc.node(pid.Node).cl.Node().Stop(ctx, pid); err != nil {
		pc.t.Fatal(err)
	}
}

func (pc *pgCluster) join(pid process.PID, groups ...string) {
	pc.t.Helper()
	if err := pc.scope(pid.Node).Join(pid, groups...); err != nil {
		pc.t.Fatal(err)
	}
}

func (pc *pgCluster) leave(pid process.PID, groups ...string) {
	pc.t.Helper()
	if err := pc.scope(pid.Node).Leave(pid, groups...); err != nil {
		pc.t.Fatal(err)
	}
}

func sorted(pids []process.PID) []string {
	out := make([]string, len(pids))
	for i, p := range pids {
		out[i] = p.String()
	}
	sort.Strings(out)
	return out
}

// members returns group's members on node, as sorted strings.
func (pc *pgCluster) members(node, group string) []string {
	return sorted(pc.scope(node).GetMembers(group))
}

// waitMembers waits until group's members on each of nodes are want (a
// PID repeated once per join).
// waitPeered waits until the scope of each named node knows every other's
// as a live peer whose whole state it has applied.
func (pc *pgCluster) waitPeered(names ...string) {
	pc.t.Helper()
	testutil.Eventually(pc.t, "every scope to know every other", func() bool {
		for _, n := range names {
			peers := pc.scope(n).View().(pgscope.ScopeView).Peers.([]PeerView)
			if len(peers) != len(names)-1 {
				return false
			}
			for _, v := range peers {
				if !v.Live || !v.Synced || v.Absent || v.Verifying {
					return false
				}
			}
		}
		return true
	})
}

func (pc *pgCluster) waitMembers(group string, want []process.PID, nodes ...string) {
	pc.t.Helper()
	w := sorted(want)
	testutil.EventuallyExplained(pc.t, 30*time.Second, fmt.Sprintf("%v to hold %q = %v", nodes, group, w), func() bool {
		for _, n := range nodes {
			if !slices.Equal(pc.members(n, group), w) {
				return false
			}
		}
		return true
	}, func() string {
		s := ""
		for _, n := range nodes {
			s += fmt.Sprintf("%s: %v\n", n, pc.members(n, group))
		}
		return s
	})
}

// copies makes a list of n copies of p.
func copies(p process.PID, n int) []process.PID { return slices.Repeat([]process.PID{p}, n) }

// replicaOf returns the replica of scope id.
func (d *Distributor) replicaOf(id string) *replica {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.scopes[id]
}
