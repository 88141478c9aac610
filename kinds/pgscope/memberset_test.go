package pgscope

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/proctor-run/proctor/process"
)

// TestMemberSetMatchesList holds the persistent set against a plain list
// in join order, through random joins and leaves, and checks that every
// older version is left as it was.
func TestMemberSetMatchesList(t *testing.T) {
	type entry struct {
		seq uint64
		pid process.PID
	}
	for _, tc := range []struct {
		name  string
		ops   int
		leave float64 // share of operations that leave
	}{
		{"grow", 5000, 0.1},
		{"churn", 20000, 0.5},
		{"drain", 3000, 0.7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.ops)))
			var (
				set     memberSet
				list    []entry
				next    uint64
				old     []memberSet
				oldList [][]process.PID
			)
			pids := func(l []entry) []process.PID {
				out := make([]process.PID, len(l))
				for i, e := range l {
					out[i] = e.pid
				}
				return out
			}
			for i := range tc.ops {
				if len(list) > 0 && r.Float64() < tc.leave {
					at := r.IntN(len(list))
					var ok bool
					set, ok = set.without(list[at].seq)
					if !ok {
						t.Fatalf("op %d: seq %d not found", i, list[at].seq)
					}
					list = slices.Delete(list, at, at+1)
					if _, ok := set.without(next + 7); ok {
						t.Fatalf("op %d: found an unused seq", i)
					}
				} else {
					pid := process.PID{Node: "n", ID: uint64(r.IntN(50) + 1)}
					set = set.with(next, pid)
					list = append(list, entry{next, pid})
					next++
				}
				if set.len() != len(list) {
					t.Fatalf("op %d: len %d, want %d", i, set.len(), len(list))
				}
				if i%97 == 0 {
					old = append(old, set)
					oldList = append(oldList, pids(list))
				}
			}
			if got, want := set.appendTo(nil), pids(list); !slices.Equal(got, want) {
				t.Fatalf("members differ: %d vs %d", len(got), len(want))
			}
			var walked []process.PID
			set.each(func(p process.PID) bool { walked = append(walked, p); return true })
			if !slices.Equal(walked, pids(list)) {
				t.Fatal("each differs from appendTo")
			}
			for i, o := range old {
				if got := o.appendTo(nil); !slices.Equal(got, oldList[i]) {
					t.Fatalf("version %d changed after later updates", i)
				}
			}
		})
	}
}

func TestMemberSetEmptiesToZero(t *testing.T) {
	var s memberSet
	for i := range uint64(2000) {
		s = s.with(i, process.PID{ID: i + 1})
	}
	for i := range uint64(2000) {
		var ok bool
		if s, ok = s.without(i); !ok {
			t.Fatalf("seq %d missing", i)
		}
	}
	if s != (memberSet{}) || s.len() != 0 {
		t.Fatalf("emptied set is %+v", s)
	}
	n := 0
	s.each(func(process.PID) bool { n++; return false })
	if n != 0 {
		t.Fatal("empty set walked a member")
	}
}
