package pgdist

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/remote"
)

// sink is a remote.Network whose peers are fakes: every frame sent to a
// known peer is counted and dropped, so what a benchmark measures is the
// sending node's work (encoding, the transport, the queue hand-off).
type sink struct {
	peers  map[string]bool
	frames atomic.Int64
}

func (n *sink) Start(remote.Receiver) error { return nil }
func (n *sink) Close() error                { return nil }

func (n *sink) Send(node string, frame []byte) error {
	if !n.peers[node] {
		return fmt.Errorf("node %q: %w", node, process.ErrUnreachable)
	}
	n.frames.Add(1)
	remote.ReleaseFrame(frame) // done with it, as a network is once it has written it
	return nil
}

// BenchmarkPGFanout64 measures a local join's (or leave's) fan-out to 64
// peers on the joining node: the scope applies the change, its replica
// encodes it once and sends it to each of the 64 peers' scopes through the
// remote transport. The peers are fakes that drop the frames. An op is one
// join or one leave, fanned out to all 64 before the next op starts, so
// that no batching helps (target: 60 µs/op).
func BenchmarkPGFanout64(b *testing.B) {
	const peers = 64
	log := slog.New(slog.DiscardHandler)
	net := &sink{peers: map[string]bool{}}
	c := newMemCluster()
	for i := range peers {
		name := fmt.Sprintf("p%02d", i)
		net.peers[name] = true
		c.see("n0", name, true)
	}
	node := process.NewNode(process.Options{Name: "n0", Logger: log})
	tr, err := remote.New(node, net, remote.Options{Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	d, err := New(node, c.member("n0"), Options{Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	spec := pgscope.DefaultSpec()
	spec.AntiEntropyInterval = 0
	spec.ActionQueueMaxSize, spec.ActionQueueSize = 1<<20, 1<<20
	env := &registry.Env{Node: node, Logger: log, Metrics: prometheus.NewRegistry()}
	s, err := pgscope.NewWithOptions(env, scopeID, spec, pgscope.Options{Distributor: d})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Stop(context.Background()) }()
	pid, err := node.Spawn(echo{}, process.SpawnOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = node.Kill(pid) }()
	r := d.replicaOf(scopeID)
	r.settle() // the start's discovers are out
	start := net.frames.Load()

	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			err = s.Join(pid, "g")
		} else {
			err = s.Leave(pid, "g")
		}
		if err != nil {
			b.Fatal(err)
		}
		// Each change is fanned out before the next: no batching.
		r.settle()
	}
	b.StopTimer()
	frames := net.frames.Load() - start
	if frames != int64(b.N)*peers {
		b.Fatalf("%d frames for %d ops to %d peers", frames, b.N, peers)
	}
	b.ReportMetric(float64(frames)/float64(b.N), "frames/op")
}

// BenchmarkPGConverge measures how long a cluster of 5 nodes takes to hold
// the same membership after a node joins: 1,000 groups of 10 members each,
// 2 members per group on every node (2,000 memberships per node). Each
// iteration starts a fifth node, new to the cluster (memberlist and
// transport on loopback, a scope whose 2 processes join the 1,000
// groups), and the clock runs
// until every node's scope holds every group's 10 members, the same on all
// five; then the node leaves again, off the clock. Reported as ms/converge
// (the mean), p50-ms and max-ms. The time includes the membership's own:
// the other nodes must see the new one before they can answer it.
func BenchmarkPGConverge(b *testing.B) {
	const groups, perNode = 1000, 2
	names := make([]string, groups)
	for i := range names {
		names[i] = fmt.Sprintf("group-%04d", i)
	}
	spec := func(s *pgscope.Spec) {
		s.ActionQueueMaxSize, s.ActionQueueSize = 1<<20, 1<<20
	}
	pc := newPGCluster(b, spec, "n1", "n2", "n3", "n4")
	populate := func(node string) {
		for range perNode {
			pc.join(pc.spawn(node), names...)
		}
	}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		populate(n)
	}
	nodes := []string{"n1", "n2", "n3", "n4"}
	converged := func(nodes []string, want int) bool {
		for _, n := range nodes {
			s := pc.scope(n)
			for _, g := range names {
				if len(s.GetMembers(g)) != want {
					return false
				}
			}
		}
		// The counts agree: the members must be the very same.
		for _, g := range names {
			ref := sorted(pc.scope(nodes[0]).GetMembers(g))
			for _, n := range nodes[1:] {
				if !slices.Equal(ref, sorted(pc.scope(n).GetMembers(g))) {
					return false
				}
			}
		}
		return true
	}
	wait := func(nodes []string, want int) {
		deadline := time.Now().Add(time.Minute)
		for !converged(nodes, want) {
			if time.Now().After(deadline) {
				b.Fatalf("%v never held %d members per group", nodes, want)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	wait(nodes, 4*perNode)

	var times []time.Duration
	b.ResetTimer()
	for i := range b.N {
		// A new node each time (a node of the same name coming back is
		// another case: a restart, which memberlist handles by
		// reclaiming the name).
		joiner := fmt.Sprintf("j%d", i)
		start := time.Now()
		pc.start(joiner)
		populate(joiner)
		wait(append(nodes, joiner), 5*perNode)
		times = append(times, time.Since(start))
		b.StopTimer()
		pc.stop(joiner)
		wait(nodes, 4*perNode)
		b.StartTimer()
	}
	var total time.Duration
	for _, t := range times {
		total += t
	}
	slices.Sort(times)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(total)/float64(b.N), "ms/converge")
	b.ReportMetric(ms(times[len(times)/2]), "p50-ms")
	b.ReportMetric(ms(times[len(times)-1]), "max-ms")
}
