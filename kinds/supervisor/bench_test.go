package supervisor

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// BenchmarkRestart: from a Go child's crash to its replacement answering a
// message (one_for_one). The clock covers the crash message, the EXIT
// event, the supervisor's decision and spawn, and one ask to the new child.
func BenchmarkRestart(b *testing.B) {
	f := newFake(b)
	f.addWorker("t:w")
	s := f.start("t:sup", &Spec{MaxRestarts: 1 << 30, RestartWindow: time.Millisecond, Children: kids("a")})
	n := f.env.Node
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		old := s.snap.Load().slots[0].info.Load().PID
		if err := n.Send(old, process.Message{Topic: "crash"}); err != nil {
			b.Fatal(err)
		}
		var pid process.PID
		for {
			c := s.snap.Load().slots[0].info.Load()
			if c.Status == StatusRunning && !c.PID.IsZero() && c.PID != old {
				pid = c.PID
				break
			}
			runtime.Gosched()
		}
		if _, _, err := n.Ask(pid, process.Message{Topic: "ping"}, time.Second); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "ns/restart")
	b.StopTimer()
	f.events()
}

// BenchmarkPartitionRoute: hashing a key to its worker's PID.
func BenchmarkPartitionRoute(b *testing.B) {
	f := newFake(b)
	f.addWorker("t:w")
	s := f.start("t:part", &Spec{Kind: KindPartition, Partitions: 8, Worker: ChildSpec{Process: "t:w"}})
	keys := make([]any, 1024)
	for i := range keys {
		if i%2 == 0 {
			keys[i] = fmt.Sprintf("user-%d", i)
		} else {
			keys[i] = float64(i)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Route(keys[i&1023]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/key")
}

// BenchmarkDynamicStartChild: start_child on a dynamic supervisor that
// already holds many children (publishing must not copy them all).
func BenchmarkDynamicStartChild(b *testing.B) {
	f := newFake(b)
	f.addWorker("t:w")
	s := f.start("t:dyn", &Spec{Kind: KindDynamic, MaxRestarts: 3})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.StartChild(ctx, ChildSpec{ID: strconv.Itoa(i), Process: "t:w"}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if s.CountChildren().Active != b.N {
		b.Fatalf("counts %+v", s.CountChildren())
	}
	f.events()
}
