package pgdist

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
)

// BenchmarkPGConverge100 simulates a cluster of 100 nodes in one process:
// in-process nodes, the in-memory network of package remote under the
// real remote transport, pg replicas and scopes, and a membership the
// benchmark drives (memCluster). 10,000 groups: each node's one process
// joins 100 groups of its own, so every node holds 10,000 memberships.
// Three events, each timed until every node's scope holds exactly the
// same members in every group:
//
//   - start: the 100 nodes start at once (each sees all the others from
//     the first moment, and its process joins as soon as its scope runs);
//   - join: a 101st node starts, and its process joins 100 groups that
//     already have a member;
//   - crash: a node vanishes (its endpoint leaves the network and every
//     other node's membership reports it gone).
//
// Reported per event: ms, and what it cost on the wire: transport frames
// and bytes, gossip messages and bytes (msgs and bytes are their sums);
// and check-pass-ms, what one pass of the convergence check over every
// node costs (it is part of each event's time), and start-scopes-ms, how
// long the 100 scopes took to start one after the other, part of start-ms.
// A start does not wait for its initial sync (pgscope.NewWithOptions, not
// the kind's Start), but its Join waits for the new scope's loop, which
// takes its turn at the CPU with the work the earlier starts sent to every
// node: every node applies every other node's 100 groups, 990,000 entries
// in all, so start-scopes-ms is mostly that work's CPU time over the cores.
// Targets: 5 s each on 2 cores.
func BenchmarkPGConverge100(b *testing.B) {
	const nodes, perNode = 100, 100
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("n%03d", i)
	}
	spec := func(s *pgscope.Spec) {
		s.ActionQueueMaxSize, s.ActionQueueSize = 1<<20, 1<<20
	}
	type event struct {
		name       string
		ms         []float64
		msgs, byts []float64
	}
	events := []*event{{name: "start"}, {name: "join"}, {name: "crash"}}
	var checks []float64 // ms of one pass of the convergence check over every node
	var starts []float64 // ms until the 100th node's scope had started
	for range b.N {
		b.StopTimer()
		mp := newMemPG(b, spec)
		mp.quiet = true
		var frames, frameBytes atomic.Int64
		mp.net.SetFault(func(_, _ string, f []byte) (bool, time.Duration) {
			frames.Add(1)
			frameBytes.Add(int64(len(f)))
			return false, 0
		})
		cost := func() (int64, int64) {
			return frames.Load() + mp.c.gossipMsgs.Load(), frameBytes.Load() + mp.c.gossipBytes.Load()
		}
		want := map[string][]process.PID{} // group -> members, everywhere
		groupsOf := func(i int) []string {
			gs := make([]string, perNode)
			for j := range gs {
				gs[j] = fmt.Sprintf("g%05d", i*perNode+j)
			}
			return gs
		}
		live := slices.Clone(names)
		record := func(e *event, start time.Time, m0, b0 int64) {
			waitSame(b, mp, live, want)
			m1, b1 := cost()
			e.ms = append(e.ms, float64(time.Since(start))/float64(time.Millisecond))
			e.msgs = append(e.msgs, float64(m1-m0))
			e.byts = append(e.byts, float64(b1-b0))
		}

		// Start: every node sees every other from the start.
		b.StartTimer()
		m0, b0 := cost()
		start := time.Now()
		mp.c.connect(names...)
		for i, n := range names {
			mp.add(n, true)
			pid := mp.spawn(n)
			gs := groupsOf(i)
			if err := mp.nodes[n].s.Join(pid, gs...); err != nil {
				b.Fatal(err)
			}
			for _, g := range gs {
				want[g] = []process.PID{pid}
			}
		}
		starts = append(starts, float64(time.Since(start))/float64(time.Millisecond))
		record(events[0], start, m0, b0)

		// Join: a node new to the cluster.
		joiner := fmt.Sprintf("n%03d", nodes)
		m0, b0 = cost()
		start = time.Now()
		mp.c.connect(append(slices.Clone(live), joiner)...)
		mp.add(joiner, true)
		pid := mp.spawn(joiner)
		gs := groupsOf(0)
		if err := mp.nodes[joiner].s.Join(pid, gs...); err != nil {
			b.Fatal(err)
		}
		for _, g := range gs {
			want[g] = append(slices.Clone(want[g]), pid)
		}
		live = append(live, joiner)
		record(events[1], start, m0, b0)

		// Crash: a node vanishes.
		victim := names[nodes/2]
		m0, b0 = cost()
		start = time.Now()
		mp.net.Down(victim)
		live = slices.DeleteFunc(live, func(n string) bool { return n == victim })
		for _, o := range live {
			mp.c.see(o, victim, false)
		}
		for g, pids := range want {
			want[g] = slices.DeleteFunc(slices.Clone(pids), func(p process.PID) bool { return p.Node == victim })
			if len(want[g]) == 0 {
				delete(want, g)
			}
		}
		record(events[2], start, m0, b0)
		b.StopTimer()
		checks = append(checks, float64(checkCost(mp, live, want))/float64(time.Millisecond))
		vn := mp.nodes[victim]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = vn.s.Stop(ctx)
		cancel()
		vn.s = nil
		mp.close()
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(median(checks), "check-pass-ms")
	b.ReportMetric(median(starts), "start-scopes-ms")
	for _, e := range events {
		b.ReportMetric(median(e.ms), e.name+"-ms")
		b.ReportMetric(median(e.msgs), e.name+"-msgs")
		b.ReportMetric(median(e.byts), e.name+"-bytes")
	}
}

// waitSame waits until every node of live holds exactly want (group to
// members; a group not in want has none). A node, once it holds it, is not
// checked again: nothing changes during an event but its convergence. The
// check itself costs (it reads every group of every node): checkCost
// reports one full pass, so the event times can be read against it.
func waitSame(b *testing.B, mp *memPG, live []string, want map[string][]process.PID) {
	b.Helper()
	sorted := make(map[string][]process.PID, len(want))
	for g, pids := range want {
		sorted[g] = slices.SortedFunc(slices.Values(pids), cmpPID)
	}
	left := slices.Clone(live)
	deadline := time.Now().Add(time.Minute)
	for len(left) > 0 {
		left = slices.DeleteFunc(left, func(n string) bool { return holds(mp.nodes[n].s, sorted) })
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var lack string
			for g, pids := range sorted {
				if !slices.Equal(slices.SortedFunc(slices.Values(mp.nodes[left[0]].s.GetMembers(g)), cmpPID), pids) && len(pids) > 0 {
					lack = pids[0].Node
					break
				}
			}
			b.Logf("%s's view of %s: %+v; %s's view of %s: %+v", left[0], lack, mp.view(left[0], lack), lack, left[0], mp.view(lack, left[0]))
			b.Fatalf("%d nodes never held the same membership (first: %s, %d groups)", len(left), left[0], len(mp.nodes[left[0]].s.WhichGroups()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkCost is how long one pass of waitSame's check over live takes.
func checkCost(mp *memPG, live []string, want map[string][]process.PID) time.Duration {
	sorted := make(map[string][]process.PID, len(want))
	for g, pids := range want {
		sorted[g] = slices.SortedFunc(slices.Values(pids), cmpPID)
	}
	start := time.Now()
	for _, n := range live {
		holds(mp.nodes[n].s, sorted)
	}
	return time.Since(start)
}

// holds reports whether s holds exactly want. A node that does not yet
// fails at its first group that differs; the count of groups, the dearest
// part (WhichGroups lists them all), is read only once every wanted group
// matched. Nothing of the scope's is modified (GetMembers may share).
func holds(s *pgscope.Scope, want map[string][]process.PID) bool {
	for g, pids := range want {
		got := s.GetMembers(g)
		switch {
		case len(got) != len(pids):
			return false
		case len(got) == 1:
			if got[0] != pids[0] {
				return false
			}
		case !slices.Equal(slices.SortedFunc(slices.Values(got), cmpPID), pids):
			return false
		}
	}
	return len(s.WhichGroups()) == len(want)
}

func cmpPID(a, b process.PID) int {
	if c := strings.Compare(a.Node, b.Node); c != 0 {
		return c
	}
	if c := cmp.Compare(a.ID, b.ID); c != 0 {
		return c
	}
	return cmp.Compare(a.Creation, b.Creation)
}
