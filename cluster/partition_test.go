package cluster

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

// sees waits until node's live members are exactly want.
func (tc *tcluster) sees(node string, want ...string) {
	tc.t.Helper()
	slices.Sort(want)
	testutil.EventuallyExplained(tc.t, 30*time.Second, node+" to see "+joinNames(want), func() bool {
		return slices.Equal(names(tc.node(node).c.Membership().Members()), want)
	}, tc.describe)
}

func joinNames(s []string) string {
	if len(s) == 0 {
		return "nobody"
	}
	out := s[0]
	for _, x := range s[1:] {
		out += "," + x
	}
	return out
}

// A partition splits the cluster in two; each side sees the other fail,
// and monitors across it fire with noconnection. Then the only seed dies,
// and the partition heals: the survivors find each other again through
// the addresses they saw before, with no seed left.
func TestPartitionHealsWithoutSeeds(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2", "n3", "n4")
	tc.converged(20 * time.Second)

	target := spawn(t, tc.node("n3").node, echo)
	watcher := spawnProbe(t, tc.node("n2").node)
	if err := tc.node("n2").node.Monitor(watcher.pid, target); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tc.node("n2").node.Ask(target, process.Message{Topic: "sync"}, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	tc.faults.Partition([]string{"n1", "n2"}, []string{"n3", "n4"})
	tc.sees("n1", "n2")
	tc.sees("n2", "n1")
	tc.sees("n3", "n4")
	tc.sees("n4", "n3")
	t.Logf("partition seen by every node after %s", time.Since(start))
	e := receive(t, watcher.events, "EXIT across the partition")
	if e.Kind != process.EventExit || e.From != target || !errors.Is(e.Exit.Err, process.ErrNoConnection) {
		t.Fatalf("event %+v", e)
	}
	if err := tc.node("n2").node.Send(target, process.Message{Topic: "x"}); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send across the partition: %v", err)
	}

	tc.crash("n1") // the only seed
	tc.sees("n2")
	start = time.Now()
	tc.faults.HealAll()
	tc.sees("n2", "n3", "n4")
	tc.sees("n3", "n2", "n4")
	tc.sees("n4", "n2", "n3")
	t.Logf("healed partition rejoined after %s", time.Since(start))
	v, _, err := tc.node("n2").node.Ask(target, process.Message{Topic: "again", Payload: "ok"}, 10*time.Second)
	if err != nil || v != "ok" {
		t.Fatalf("ask after the heal: %v %v", v, err)
	}
}

// A cut in one direction only: the transport's sends that way fail at
// once, while the membership (indirect probes) keeps both nodes members.
func TestOneWayCut(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2", "n3")
	tc.converged(20 * time.Second)
	pid := spawn(t, tc.node("n2").node, echo)
	tc.faults.Cut("n1", "n2")
	if err := tc.node("n1").node.Send(pid, process.Message{Topic: "x"}); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send over the cut: %v", err)
	}
	back := spawn(t, tc.node("n1").node, echo)
	if _, _, err := tc.node("n2").node.Ask(back, process.Message{}, time.Second); !errors.Is(err, process.ErrTimeout) {
		t.Fatalf("an ask whose reply must cross the cut: %v", err)
	}
	tc.faults.Heal("n1", "n2")
	testutil.Eventually(t, "the ask to pass again", func() bool {
		_, _, err := tc.node("n1").node.Ask(pid, process.Message{}, 2*time.Second)
		return err == nil
	})
}

// Frames dropped or delayed by the fault layer: a dropped tell is lost
// silently, a delayed one holds up those behind it, order is kept.
func TestFrameFaults(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	pr := spawnProbe(t, tc.node("n2").node)
	n1 := tc.node("n1").node
	tc.faults.SetFrameFault(func(from, to string, frame []byte) (bool, time.Duration) {
		switch {
		case contains(string(frame), "drop"):
			return true, 0
		case contains(string(frame), "slow"):
			return false, 300 * time.Millisecond
		}
		return false, 0
	})
	defer tc.faults.SetFrameFault(nil)
	start := time.Now()
	for _, topic := range []string{"first", "drop", "slow", "after"} {
		if err := n1.Send(pr.pid, process.Message{Topic: topic}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for range 3 {
		got = append(got, receive(t, pr.msgs, "message").Topic)
	}
	if !slices.Equal(got, []string{"first", "slow", "after"}) || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("got %v after %s", got, time.Since(start))
	}
}

// Membership packets between two nodes are all lost: memberlist's
// indirect probes (through the third node) and TCP fallback keep each a
// member of the other, and the transport is untouched. Removing the fault
// leaves the cluster as it was.
func TestPacketFault(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2", "n3")
	tc.converged(20 * time.Second)
	var dropped atomic.Int64
	tc.faults.SetPacketFault(func(from, to string) (bool, time.Duration) {
		if (from == "n1" && to == "n2") || (from == "n2" && to == "n1") {
			dropped.Add(1)
			return true, 0
		}
		return false, 10 * time.Millisecond
	})
	var left atomic.Int64
	_, cancel := tc.node("n1").c.Membership().Subscribe(func(e Event) {
		if e.Kind == MemberLeft {
			left.Add(1)
		}
	})
	defer cancel()
	testutil.Eventually(t, "packets between n1 and n2 to be dropped", func() bool { return dropped.Load() >= 10 })
	pid := spawn(t, tc.node("n2").node, echo)
	if _, _, err := tc.node("n1").node.Ask(pid, process.Message{}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	tc.faults.SetPacketFault(nil)
	tc.converged(20 * time.Second)
	if n := left.Load(); n != 0 {
		t.Errorf("n1 saw %d nodes leave", n)
	}
}
