package pgscope

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/proctor-run/proctor/process"
)

// procGroups agree with a map through random adds and removes, short
// (scanned) and long (indexed), and reset empties them.
func TestProcGroupsAgainstMap(t *testing.T) {
	for _, groups := range []int{3, procGroupsScan, 200} {
		r := rand.New(rand.NewPCG(uint64(groups), 7))
		states := make([]*groupState, groups)
		for i := range states {
			states[i] = &groupState{}
		}
		var pg procGroups
		ref := map[*groupState][]uint64{} // sequence numbers in join order
		var next uint64
		for range 20000 {
			gs := states[r.IntN(groups)]
			n := 1 + r.IntN(3)
			if r.IntN(2) == 0 {
				for range n {
					pg.add(gs, next)
					ref[gs] = append(ref[gs], next)
					next++
				}
			} else {
				for range n {
					seq, ok := pg.pop(gs)
					have := ref[gs]
					if ok != (len(have) > 0) {
						t.Fatalf("%d groups: pop ok %v with %d joins", groups, ok, len(have))
					}
					if !ok {
						break
					}
					if seq != have[len(have)-1] {
						t.Fatalf("%d groups: pop gave %d, want the latest %d", groups, seq, have[len(have)-1])
					}
					if ref[gs] = have[:len(have)-1]; len(ref[gs]) == 0 {
						delete(ref, gs)
					}
				}
			}
			if pg.len() != len(ref) {
				t.Fatalf("%d groups: len %d, want %d", groups, pg.len(), len(ref))
			}
		}
		for _, gs := range states {
			if got := pg.count(gs); got != len(ref[gs]) {
				t.Fatalf("%d groups: count %d, want %d", groups, got, len(ref[gs]))
			}
			if i := pg.find(gs); i >= 0 {
				var seqs []uint64
				pg.list[i].seqs(func(s uint64) { seqs = append(seqs, s) })
				for j, s := range seqs {
					if want := ref[gs][len(seqs)-1-j]; s != want {
						t.Fatalf("%d groups: seqs %v, want %v reversed", groups, seqs, ref[gs])
					}
				}
			}
		}
		if pg.at != nil {
			for i, e := range pg.list {
				if pg.at[e.gs] != i || len(pg.at) != len(pg.list) {
					t.Fatalf("%d groups: index out of step with the list", groups)
				}
			}
		}
		pg.reset()
		if pg.len() != 0 || pg.count(states[0]) != 0 {
			t.Fatal("reset left groups")
		}
	}
}

// A process in many groups (past the scanned list), some joined twice,
// leaves some and exits: every membership goes, one event per copy.
func TestManyGroupsExit(t *testing.T) {
	h := newHarness(t, nil)
	p := h.pid()
	sub, _, err := h.s.Events(process.PID{})
	h.must(err)
	defer sub.Close(false)
	var names []string
	for i := range 3 * procGroupsScan {
		names = append(names, fmt.Sprintf("g%02d", i))
	}
	h.must(h.s.Join(p, names...))
	h.must(h.s.Join(p, names[:5]...))
	h.must(h.s.Leave(p, names[10:20]...))
	for range len(names) + 5 + 10 {
		next(t, sub) // the joins and leaves so far
	}
	if got := len(h.s.WhichGroups()); got != len(names)-10 {
		t.Fatalf("%d groups, want %d", got, len(names)-10)
	}
	h.kill(p)
	left := map[string]int{}
	for range len(names) - 10 + 5 {
		ev := next(t, sub)
		if ev.Kind != MemberLeft || len(ev.PIDs) != 1 || ev.PIDs[0] != p {
			t.Fatalf("event %+v", ev)
		}
		left[ev.Group]++
	}
	for i, g := range names {
		want := 1
		switch {
		case i < 5:
			want = 2
		case i >= 10 && i < 20:
			want = 0
		}
		if left[g] != want {
			t.Fatalf("%s: %d leave events, want %d", g, left[g], want)
		}
	}
	if g := h.s.WhichGroups(); len(g) != 0 {
		t.Fatalf("groups left: %v", g)
	}
	h.none(sub)
}
