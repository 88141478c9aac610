// Package clustertest starts in-process clusters for tests: several nodes
// of one test program on 127.0.0.1, each with its own process.Node, real
// memberlist and TCP transport on free ports, sharing a faultnet.Faults
// (interposed on every node's network) to inject partitions, cuts, drops
// and delays.
//
//	c := clustertest.New(t, clustertest.Options{}, "n1", "n2", "n3")
//	c.Converged()                      // every node sees every other
//	c.Node("n1").Send(pid, msg)        // process.Node of n1
//	c.Faults.Partition([]string{"n1"}, []string{"n2", "n3"})
//	c.Sees("n1")                       // n1 sees nobody
//	c.Faults.HealAll()
//	c.Stop("n3")                       // leaves gracefully
//
// Everything stops at the end of the test.
package clustertest

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/proctor-run/proctor/cluster"
	"github.com/proctor-run/proctor/internal/faultnet"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

// Options configure a test cluster. The zero value is usable.
type Options struct {
	// Secret is every node's (default: a fixed test secret; set NoSecret
	// for none).
	Secret   []byte
	NoSecret bool
	// Timing is every node's (zero fields: the cluster's defaults).
	Timing cluster.Timing
	// Logger receives every node's logs (default: discarded).
	Logger *slog.Logger
	// Within bounds the waits of Converged and Sees. Default: 30s.
	Within time.Duration
}

// Cluster is a test cluster.
type Cluster struct {
	t      testing.TB
	opts   Options
	Faults *faultnet.Faults

	mu    sync.Mutex
	nodes map[string]*cluster.Cluster
	seed  string
}

// New starts a node for each name, each joining the first, and stops them
// all at the end of the test.
func New(t testing.TB, opts Options, names ...string) *Cluster {
	t.Helper()
	if opts.Secret == nil && !opts.NoSecret {
		opts.Secret = []byte("clustertest shared secret, 32 b")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Within <= 0 {
		opts.Within = 30 * time.Second
	}
	c := &Cluster{t: t, opts: opts, Faults: faultnet.New(), nodes: map[string]*cluster.Cluster{}}
	t.Cleanup(c.close)
	for _, n := range names {
		c.Start(n)
	}
	return c
}

// Start starts (or restarts) node name, joining the first node started.
func (c *Cluster) Start(name string) *cluster.Cluster {
	c.t.Helper()
	c.mu.Lock()
	var join []string
	if c.seed != "" {
		join = []string{c.seed}
	}
	c.mu.Unlock()
	var secret []byte
	if !c.opts.NoSecret {
		secret = c.opts.Secret
	}
	cl, err := cluster.Start(cluster.Options{
		Node:      process.NewNode(process.Options{Name: name, Logger: c.opts.Logger}),
		Bind:      "127.0.0.1:0",
		Join:      join,
		Secret:    secret,
		Logger:    c.opts.Logger,
		Timing:    c.opts.Timing,
		Interpose: c.Faults.Node(name),
	})
	if err != nil {
		c.t.Fatalf("clustertest: start %s: %v", name, err)
	}
	c.mu.Lock()
	c.nodes[name] = cl
	if c.seed == "" {
		c.seed = cl.Membership().Addr()
	}
	c.mu.Unlock()
	return cl
}

// Cluster returns node name's cluster (nil if it is not running).
func (c *Cluster) Cluster(name string) *cluster.Cluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[name]
}

// Node returns node name's process.Node.
func (c *Cluster) Node(name string) *process.Node {
	cl := c.Cluster(name)
	if cl == nil {
		c.t.Fatalf("clustertest: no node %s", name)
	}
	return cl.Node()
}

// Names returns the running nodes' names, sorted.
func (c *Cluster) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.nodes))
	for n := range c.nodes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Stop makes node name leave gracefully and stops it.
func (c *Cluster) Stop(name string) {
	c.t.Helper()
	c.mu.Lock()
	cl := c.nodes[name]
	delete(c.nodes, name)
	c.mu.Unlock()
	if cl != nil {
		if err := cl.Close(); err != nil {
			c.t.Errorf("clustertest: stop %s: %v", name, err)
		}
	}
}

// Converged waits until every running node sees every other as a live
// member.
func (c *Cluster) Converged() {
	c.t.Helper()
	for _, n := range c.Names() {
		others := slices.DeleteFunc(c.Names(), func(x string) bool { return x == n })
		c.Sees(n, others...)
	}
}

// Sees waits until node's live members are exactly want.
func (c *Cluster) Sees(node string, want ...string) {
	c.t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	cl := c.Cluster(node)
	testutil.EventuallyExplained(c.t, c.opts.Within, fmt.Sprintf("%s to see %v", node, want), func() bool {
		return slices.Equal(memberNames(cl.Membership().Members()), want)
	}, c.describe)
}

func memberNames(ms []cluster.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

func (c *Cluster) describe() string {
	s := ""
	for _, n := range c.Names() {
		s += fmt.Sprintf("%s sees %v\n", n, memberNames(c.Cluster(n).Membership().Members()))
	}
	return s
}

func (c *Cluster) close() {
	c.mu.Lock()
	nodes := c.nodes
	c.nodes = map[string]*cluster.Cluster{}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, cl := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = cl.Close()
		}()
	}
	wg.Wait()
}
