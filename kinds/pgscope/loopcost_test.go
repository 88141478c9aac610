package pgscope

import (
	"fmt"
	"testing"

	"github.com/proctor-run/proctor/process"
)

// BenchmarkJoinLeaveOnLoop is BenchmarkJoinLeave's work on the scope's
// loop alone: b.N joins and leaves run inside one loop command, so the
// figure is the state's cost (the index, the member set, the version
// published) without the two round trips into the loop.
func BenchmarkJoinLeaveOnLoop(b *testing.B) {
	bs := newBenchScope(b)
	pid := bs.spawn(b, nop{})
	group := []string{"g"}
	b.ReportAllocs()
	b.ResetTimer()
	err := bs.s.do("bench", func() error {
		for range b.N {
			if err := bs.s.st.join(pid, group); err != nil {
				return err
			}
			if err := bs.s.st.leave(pid, group); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkApplyNewGroupsOnLoop is a peer's ops on the loop alone, as a
// cluster's start brings them (issue 23): each op is a join of one member
// of another node to a group new to the scope, 100 ops a batch
// (OnLoop.ApplyOps), so the figure per op is the per-entry apply: the
// group's state, its version, its cell and its place in the index.
func BenchmarkApplyNewGroupsOnLoop(b *testing.B) {
	bs := newBenchScope(b)
	remote := process.PID{Node: "n2", ID: 7, Creation: 1}
	const batch = 100
	ops := make([]Op, b.N)
	for i := range ops {
		ops[i] = Op{Group: fmt.Sprintf("g%07d", i), PIDs: []process.PID{remote}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	err := bs.s.do("bench", func() error {
		for i := 0; i < len(ops); i += batch {
			if err := bs.s.OnLoop().ApplyOps("n2", ops[i:min(i+batch, len(ops))]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRemoteJoinLeaveOnLoop is the receiving end of
// BenchmarkPGJoinVisibleRemote (package pgdist) on the loop alone: a
// peer's join of one member, then its leave, as ops of one message each
// (OnLoop.ApplyOps), b.N pairs inside one loop command.
func BenchmarkRemoteJoinLeaveOnLoop(b *testing.B) {
	bs := newBenchScope(b)
	remote := process.PID{Node: "n2", ID: 7, Creation: 1}
	join := []Op{{Group: "g", PIDs: []process.PID{remote}}}
	leave := []Op{{Leave: true, Group: "g", PIDs: []process.PID{remote}}}
	b.ReportAllocs()
	b.ResetTimer()
	err := bs.s.do("bench", func() error {
		on := bs.s.OnLoop()
		for range b.N {
			if err := on.ApplyOps("n2", join); err != nil {
				return err
			}
			if err := on.ApplyOps("n2", leave); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
