package pgscope

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

type benchScope struct {
	node *process.Node
	s    *Scope
	pids []process.PID
}

func newBenchScope(b *testing.B) *benchScope { return newBenchScopeWith(b, nil) }

// newBenchScopeWith is newBenchScope with mod adjusting the spec.
func newBenchScopeWith(b *testing.B, mod func(*Spec)) *benchScope {
	b.Helper()
	node := process.NewNode(process.Options{Name: "bench", Logger: slog.New(slog.DiscardHandler)})
	env := &registry.Env{Node: node, Logger: slog.New(slog.DiscardHandler), Metrics: prometheus.NewRegistry()}
	spec := DefaultSpec()
	spec.ActionQueueMaxSize = 1 << 20
	spec.ActionQueueSize = 1 << 20
	if mod != nil {
		mod(&spec)
	}
	s, err := New(env, "bench:pg", spec)
	if err != nil {
		b.Fatal(err)
	}
	bs := &benchScope{node: node, s: s}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
		for _, p := range bs.pids {
			_ = node.Kill(p)
		}
	})
	return bs
}

type nop struct{}

func (nop) Receive(process.Context, process.Message) {}

func (bs *benchScope) spawn(b *testing.B, beh process.Behavior) process.PID {
	pid, err := bs.node.Spawn(beh, process.SpawnOptions{})
	if err != nil {
		b.Fatal(err)
	}
	bs.pids = append(bs.pids, pid)
	return pid
}

func benchJoinLeave(b *testing.B, others int) {
	bs := newBenchScope(b)
	if others > 0 {
		other := bs.spawn(b, nop{})
		batch := make([]string, 0, 1000)
		for i := range others {
			batch = append(batch, fmt.Sprintf("other-%d", i))
			if len(batch) == cap(batch) || i == others-1 {
				if err := bs.s.Join(other, batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if n := len(bs.s.WhichGroups()); n != others {
			b.Fatalf("%d groups, want %d", n, others)
		}
	}
	bs.timeJoinLeave(b, "g")
}

// timeJoinLeave times b.N joins and leaves of group by one new process.
func (bs *benchScope) timeJoinLeave(b *testing.B, group string) {
	b.Helper()
	pid := bs.spawn(b, nop{})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := bs.s.Join(pid, group); err != nil {
			b.Fatal(err)
		}
		if err := bs.s.Leave(pid, group); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJoinLeave: one join and one leave, each filling and emptying
// the group (target ≤ 2 µs/op). Each is a round trip into the scope's loop.
func BenchmarkJoinLeave(b *testing.B) { benchJoinLeave(b, 0) }

// BenchmarkJoinLeave100kGroups: the same beside 100,000 other groups
// (target ≤ 5 µs/op).
func BenchmarkJoinLeave100kGroups(b *testing.B) { benchJoinLeave(b, 100_000) }

// bigGroup fills group with n members: n/100 processes joining it 100
// times each (one command per process), so that the setup stays cheap on a
// scope whose change cost grows with the group.
func (bs *benchScope) bigGroup(b *testing.B, group string, n int) {
	b.Helper()
	batch := make([]string, 100)
	for i := range batch {
		batch[i] = group
	}
	for range n / len(batch) {
		if err := bs.s.Join(bs.spawn(b, nop{}), batch...); err != nil {
			b.Fatal(err)
		}
	}
	if got := len(bs.s.GetMembers(group)); got != n {
		b.Fatalf("%d members, want %d", got, n)
	}
}

// BenchmarkJoinLeaveBigGroup: one join and one leave of a group of 100,000
// members (target ≤ 5 µs/op): a change costs the same in a big group as in
// a small one.
func BenchmarkJoinLeaveBigGroup(b *testing.B) {
	bs := newBenchScope(b)
	bs.bigGroup(b, "g", 100_000)
	bs.timeJoinLeave(b, "g")
}

// BenchmarkGetMembers reads a one-member group (target ≤ 40 ns, no
// allocation: the slice returned is the group's published version).
func BenchmarkGetMembers(b *testing.B) {
	bs := newBenchScope(b)
	pid := bs.spawn(b, nop{})
	if err := bs.s.Join(pid, "g"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if m := bs.s.GetMembers("g"); len(m) != 1 {
			b.Fatal(m)
		}
	}
}

// BenchmarkGetMembers10k reads a group of 10,000 members: the version's
// flat list, built by the first reader, then shared (no allocation).
func BenchmarkGetMembers10k(b *testing.B) {
	bs := newBenchScope(b)
	bs.bigGroup(b, "g", 10_000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if m := bs.s.GetMembers("g"); len(m) != 10_000 {
			b.Fatal(len(m))
		}
	}
}

// BenchmarkMembers10k takes the current version of a group of 10,000
// members and walks it in place: no allocation, no copy.
func BenchmarkMembers10k(b *testing.B) {
	bs := newBenchScope(b)
	bs.bigGroup(b, "g", 10_000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m := bs.s.Members("g")
		n := 0
		for range m.All() {
			n++
		}
		if n != 10_000 || m.Len() != n {
			b.Fatal(n)
		}
	}
}

// BenchmarkGetMembersParallel: readers on every core; ns/op (wall time per
// read) falls as -cpu grows when reads scale.
func BenchmarkGetMembersParallel(b *testing.B) {
	bs := newBenchScope(b)
	pid := bs.spawn(b, nop{})
	if err := bs.s.Join(pid, "g"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if m := bs.s.GetMembers("g"); len(m) != 1 {
				b.Error(m)
				return
			}
		}
	})
}

// BenchmarkGetMembersParallelWithWriter is the same while a writer joins
// and leaves as fast as it can: readers never wait for it.
func BenchmarkGetMembersParallelWithWriter(b *testing.B) {
	bs := newBenchScope(b)
	pid, writer := bs.spawn(b, nop{}), bs.spawn(b, nop{})
	if err := bs.s.Join(pid, "g"); err != nil {
		b.Fatal(err)
	}
	stop, _ := churn(bs, writer, "w")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if m := bs.s.GetMembers("g"); len(m) != 1 {
				b.Error(m)
				return
			}
		}
	})
	b.StopTimer()
	stop()
}

// churn joins and leaves pid to group as fast as it can, on a goroutine of
// its own, until stop is called (which waits for it); done counts the
// join+leaves so far.
func churn(bs *benchScope, pid process.PID, group string) (stop func(), done *atomic.Int64) {
	quit, ended := make(chan struct{}), make(chan struct{})
	done = new(atomic.Int64)
	go func() {
		defer close(ended)
		for {
			select {
			case <-quit:
				return
			default:
			}
			_ = bs.s.Join(pid, group)
			_ = bs.s.Leave(pid, group)
			done.Add(1)
		}
	}()
	return func() { close(quit); <-ended }, done
}

type counter struct{ n *atomic.Int64 }

func (c counter) Receive(process.Context, process.Message) { c.n.Add(1) }

// BenchmarkBroadcastLocal10k: one broadcast to 10,000 local members; the
// clock runs until every member has the message in its mailbox (target
// ≤ 5 ms). The members are goroutine processes that only read their
// mailboxes between rounds, off the clock, so the figure is the scope's
// and the mailboxes' work alone.
func BenchmarkBroadcastLocal10k(b *testing.B) {
	const members = 10_000
	bs := newBenchScope(b)
	var got atomic.Int64
	kicks := make([]chan struct{}, members)
	for i := range members {
		kick := make(chan struct{}, 1)
		kicks[i] = kick
		pid, err := bs.node.SpawnFunc(func(p *process.Proc) (any, error) {
			for {
				select {
				case <-kick:
					for {
						if _, ok := p.TryReceive(); !ok {
							break
						}
						got.Add(1)
					}
				case <-p.Context().Done():
					return nil, nil
				}
			}
		}, process.SpawnOptions{})
		if err != nil {
			b.Fatal(err)
		}
		bs.pids = append(bs.pids, pid)
		if err := bs.s.Join(pid, "all"); err != nil {
			b.Fatal(err)
		}
	}
	from := bs.spawn(b, nop{})
	b.ReportAllocs()
	b.ResetTimer()
	var want int64
	for range b.N {
		n, err := bs.s.BroadcastLocal(from, "all", "tick", nil)
		if err != nil || n != members {
			b.Fatalf("reached %d: %v", n, err)
		}
		b.StopTimer()
		want += members
		for _, k := range kicks {
			k <- struct{}{}
		}
		for got.Load() < want {
			time.Sleep(50 * time.Microsecond)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/broadcast")
}

// BenchmarkBroadcastLocal10kConsumers is the same with members that
// consume as messages arrive (Behaviors woken per message), so receivers
// compete with the sender for the cores; the clock still stops when the
// broadcast has filled every mailbox.
func BenchmarkBroadcastLocal10kConsumers(b *testing.B) {
	const members = 10_000
	bs := newBenchScope(b)
	var got atomic.Int64
	for range members {
		pid := bs.spawn(b, counter{&got})
		if err := bs.s.Join(pid, "all"); err != nil {
			b.Fatal(err)
		}
	}
	from := bs.spawn(b, nop{})
	b.ReportAllocs()
	b.ResetTimer()
	var want int64
	for range b.N {
		n, err := bs.s.BroadcastLocal(from, "all", "tick", nil)
		if err != nil || n != members {
			b.Fatalf("reached %d: %v", n, err)
		}
		b.StopTimer()
		want += members
		for got.Load() < want {
			time.Sleep(100 * time.Microsecond)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/broadcast")
}

// BenchmarkExit30kMembers: 30,000 members of one group exit at once; the
// clock runs from the first kill until GetMembers no longer lists any of
// them (target ≤ 1 s/op). Spawning and joining are off the clock.
func BenchmarkExit30kMembers(b *testing.B) {
	const n = 30_000
	bs := newBenchScope(b)
	pids := make([]process.PID, n)
	for range b.N {
		b.StopTimer()
		for i := range pids {
			pid, err := bs.node.Spawn(nop{}, process.SpawnOptions{})
			if err != nil {
				b.Fatal(err)
			}
			pids[i] = pid
			if err := bs.s.Join(pid, "g"); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		for _, p := range pids {
			_ = bs.node.Kill(p)
		}
		for bs.s.Members("g").Len() > 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// BenchmarkJoinLeaveBesideUnreadSubscriptions: a join and a leave of one
// process beside 100 processes holding 1,000 unread subscriptions each
// (the most a process may hold, MaxSubscriptionsPerProcess) of the group
// hot, every buffer full: on hot itself (each change is offered to
// 100,000 subscribers), on another group (cold), and on cold while a
// second process joins and leaves hot without pause (cold-beside-hot:
// what one group's subscribers cost every other group; issue 22 wants it
// in µs). lua/modules/pg has the same with scripts' subscriptions.
func BenchmarkJoinLeaveBesideUnreadSubscriptions(b *testing.B) {
	const holders = 100
	bs := newBenchScopeWith(b, func(sp *Spec) { sp.MonitorBuffer = 4 })
	for range holders {
		owner := bs.spawn(b, nop{})
		for range MaxSubscriptionsPerProcess {
			if _, _, err := bs.s.Monitor(owner, "hot"); err != nil {
				b.Fatal(err)
			}
		}
	}
	pid := bs.spawn(b, nop{})
	joinLeave := func(b *testing.B, pid process.PID, g string) {
		if err := bs.s.Join(pid, g); err != nil {
			b.Fatal(err)
		}
		if err := bs.s.Leave(pid, g); err != nil {
			b.Fatal(err)
		}
	}
	// Fill every buffer, so that each offer is a drop.
	for range 4 {
		joinLeave(b, pid, "hot")
	}
	for _, g := range []string{"hot", "cold"} {
		b.Run(g, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				joinLeave(b, pid, g)
			}
		})
	}
	b.Run("cold-beside-hot", func(b *testing.B) {
		other := bs.spawn(b, nop{})
		stop, hot := churn(bs, other, "hot")
		for hot.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		b.ReportAllocs()
		for b.Loop() {
			joinLeave(b, pid, "cold")
		}
		b.StopTimer()
		stop()
		b.ReportMetric(float64(hot.Load()), "hot-join+leaves")
	})
}
