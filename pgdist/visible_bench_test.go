package pgdist

import (
	"runtime"
	"testing"
	"time"

	"github.com/proctor-run/proctor/kinds/pgscope"
)

// BenchmarkPGJoinVisibleRemote measures a join's latency across nodes: from
// the call to Join on n1 to the member being visible (GetMembers) in n2's
// scope, over the in-memory network (remote.MemNetwork, a goroutine per
// direction as a connection would have). An op is one join or one leave
// of the same process, each waited for on n2 before the next starts, so
// that no batching helps: the whole path (the scope's loop, the
// distribution, the transport's encoding, the network's hand-off, the
// receiving scope) is on the clock once per op, reported as ns/op. The
// wait reads n2's published index without allocating, so that the
// polling adds no garbage of its own.
func BenchmarkPGJoinVisibleRemote(b *testing.B) {
	mp := newMemPG(b, func(s *pgscope.Spec) {
		s.AntiEntropyInterval = 0
		s.ActionQueueMaxSize, s.ActionQueueSize = 1<<20, 1<<20
	})
	mp.quiet = true
	mp.c.connect("n1", "n2")
	mp.add("n1", true)
	mp.add("n2", true)
	pid := mp.spawn("n1")
	s1, s2 := mp.nodes["n1"].s, mp.nodes["n2"].s
	// The two scopes know each other before the clock starts: a first
	// join crosses.
	if err := s1.Join(pid, "warm"); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(s2.GetMembers("warm")) != 1 {
		if time.Now().After(deadline) {
			b.Fatal("n2 never saw n1's first member")
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		join := i%2 == 0
		var err error
		if join {
			err = s1.Join(pid, "g")
		} else {
			err = s1.Leave(pid, "g")
		}
		if err != nil {
			b.Fatal(err)
		}
		want := 0
		if join {
			want = 1
		}
		for spins := 0; len(s2.SharedDistinctMembers("g")) != want; spins++ {
			if spins&1023 == 1023 && time.Now().After(start.Add(time.Minute)) {
				b.Fatalf("op %d never became visible on n2", i)
			}
			runtime.Gosched()
		}
	}
	b.StopTimer()
}
