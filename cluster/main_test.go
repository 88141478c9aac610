package cluster

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/internal/faultnet"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

// TestMain runs up to 4 tests at once: they share no package state (each
// builds its nodes on free ports of 127.0.0.1), and they spend their time
// waiting on memberlist's probes and gossip rounds, not computing. Eight
// at once, beside the other packages' tests on two busy cores, starved
// memberlist's packet goroutines long enough to lose gossip
// (TestGossipKinds: a node got none of 20 broadcasts in 20 s).
func TestMain(m *testing.M) {
	testutil.WaitingTests(4)
	goleak.VerifyTestMain(m, testutil.IgnoreMemberlistProbe)
}

var quiet = slog.New(slog.DiscardHandler)

// testSecret is a secret every node of a test cluster shares.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// tnode is one node of an in-process test cluster.
type tnode struct {
	name string
	node *process.Node
	c    *Cluster
	logs *testutil.SyncBuffer
}

// tcluster is several nodes on 127.0.0.1, each on free ports.
type tcluster struct {
	t      *testing.T
	faults *faultnet.Faults
	secret []byte
	timing Timing
	window time.Duration // Options.LogWindow

	mu    sync.Mutex
	nodes map[string]*tnode
	seed  string // the first node's gossip address
}

func newTestCluster(t *testing.T, names ...string) *tcluster {
	t.Helper()
	tc := &tcluster{t: t, faults: faultnet.New(), secret: testSecret, nodes: map[string]*tnode{}}
	t.Cleanup(tc.close)
	for _, n := range names {
		tc.start(n)
	}
	return tc
}

// options returns a node's options; join names the seeds.
func (tc *tcluster) options(name string, join []string) (Options, *testutil.SyncBuffer) {
	logs := &testutil.SyncBuffer{}
	return Options{
		Node:      process.NewNode(process.Options{Name: name, Logger: quiet}),
		Bind:      "127.0.0.1:0",
		Join:      join,
		Secret:    tc.secret,
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Timing:    tc.timing,
		LogWindow: tc.window,
		Interpose: tc.faults.Node(name),
	}, logs
}

// start starts a node joining the first node started.
func (tc *tcluster) start(name string) *tnode {
	tc.t.Helper()
	var join []string
	if tc.seed != "" {
		join = []string{tc.seed}
	}
	opts, logs := tc.options(name, join)
	return tc.startWith(name, opts, logs)
}

func (tc *tcluster) startWith(name string, opts Options, logs *testutil.SyncBuffer) *tnode {
	tc.t.Helper()
	c, err := Start(opts)
	if err != nil {
		tc.t.Fatalf("start %s: %v", name, err)
	}
	n := &tnode{name: name, node: opts.Node, c: c, logs: logs}
	tc.mu.Lock()
	tc.nodes[name] = n
	if tc.seed == "" {
		tc.seed = c.Membership().Addr()
	}
	tc.mu.Unlock()
	return n
}

func (tc *tcluster) node(name string) *tnode {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.nodes[name]
}

// crash stops a node without leaving: memberlist and the transport stop
// as a killed process's would (no leave message, connections reset).
func (tc *tcluster) crash(name string) {
	n := tc.silence(name)
	_ = n.c.Close()
}

// silence takes node name out of the test cluster and stops its
// membership without a word, as a killed process's would stop.
func (tc *tcluster) silence(name string) *tnode {
	n := tc.node(name)
	tc.mu.Lock()
	delete(tc.nodes, name)
	tc.mu.Unlock()
	m := n.c.ms
	m.leaveOnce.Do(func() {
		close(m.stopRejoin)
		<-m.rejoinDone
		m.stop()
		_ = m.ml.Shutdown()
		<-m.lp.Done()
	})
	return n
}

// stop leaves gracefully.
func (tc *tcluster) stop(name string) {
	n := tc.node(name)
	tc.mu.Lock()
	delete(tc.nodes, name)
	tc.mu.Unlock()
	if err := n.c.Close(); err != nil {
		tc.t.Errorf("close %s: %v", name, err)
	}
}

func (tc *tcluster) close() {
	tc.mu.Lock()
	nodes := tc.nodes
	tc.nodes = map[string]*tnode{}
	tc.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = n.c.Close()
		}()
	}
	wg.Wait()
}

// names returns the live members of node as seen by it.
func names(ms []Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// converged waits until every node sees every other as a live member.
func (tc *tcluster) converged(within time.Duration) {
	tc.t.Helper()
	testutil.EventuallyExplained(tc.t, within, "membership to converge", func() bool {
		tc.mu.Lock()
		defer tc.mu.Unlock()
		for _, n := range tc.nodes {
			if len(n.c.Membership().Members()) != len(tc.nodes)-1 {
				return false
			}
		}
		return true
	}, tc.describe)
}

func (tc *tcluster) describe() string {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	s := ""
	for name, n := range tc.nodes {
		s += fmt.Sprintf("%s sees %v\n", name, names(n.c.Membership().Members()))
	}
	return s
}

// behaviorFunc adapts a function to process.Behavior.
type behaviorFunc func(ctx process.Context, m process.Message)

func (f behaviorFunc) Receive(ctx process.Context, m process.Message) { f(ctx, m) }

// echo replies to an ask with its payload.
var echo = behaviorFunc(func(ctx process.Context, m process.Message) {
	if m.CanReply() {
		ctx.Reply(&m, m.Payload, nil)
	}
})

// spawn starts b on n, killed at cleanup.
func spawn(t *testing.T, n *process.Node, b process.Behavior) process.PID {
	t.Helper()
	pid, err := n.Spawn(b, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Kill(pid) })
	return pid
}

// probe is a goroutine process that hands what it receives to channels.
type probe struct {
	pid    process.PID
	msgs   chan process.Message
	events chan process.Event
}

func spawnProbe(t *testing.T, n *process.Node) *probe {
	t.Helper()
	pr := &probe{msgs: make(chan process.Message, 1024), events: make(chan process.Event, 64)}
	pid, err := n.SpawnFunc(func(p *process.Proc) (any, error) {
		for {
			if e, ok := p.TryEvent(); ok {
				pr.events <- e
			} else if m, ok := p.TryReceive(); ok {
				pr.msgs <- m
			} else if p.Arm(); p.Pending()+p.PendingEvents() > 0 {
				p.Disarm()
			} else {
				select {
				case <-p.Context().Done():
					return nil, p.Context().Err()
				case <-p.Wake():
				}
			}
		}
	}, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pr.pid = pid
	t.Cleanup(func() { _ = n.Kill(pid) })
	return pr
}

// receive takes the next value from ch, failing after a generous deadline.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: none within 15s", what)
	}
	var zero T
	return zero
}
