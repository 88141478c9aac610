package pgscope

import "testing"

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
