package pgscope

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/process"
)

// TestRemoteSet: with keeps the nodes sorted, replaces and removes a
// node's list, and never changes the set it was called on (published
// versions share it); small sets scan, large ones search.
func TestRemoteSet(t *testing.T) {
	pid := func(node string, id uint64) []process.PID { return []process.PID{{Node: node, ID: id}} }
	for _, n := range []int{3, 20} {
		t.Run(fmt.Sprint(n, " nodes"), func(t *testing.T) {
			var r remoteSet
			order := make([]string, n)
			for i := range order {
				order[i] = fmt.Sprintf("n%02d", (i*7)%n) // not in order
			}
			for i, node := range order {
				before := slices.Clone(r)
				r2 := r.with(node, pid(node, 1))
				if !slices.EqualFunc(r, before, func(a, b nodeMembers) bool { return a.node == b.node }) {
					t.Fatalf("with changed the set it was called on")
				}
				r = r2
				if len(r) != i+1 {
					t.Fatalf("%d nodes after %d insertions", len(r), i+1)
				}
			}
			if !slices.IsSortedFunc(r, func(a, b nodeMembers) int { return strings.Compare(a.node, b.node) }) {
				t.Fatalf("not sorted: %v", r)
			}
			mid := fmt.Sprintf("n%02d", n/2)
			old := r
			r = r.with(mid, pid(mid, 2))
			if got := r.get(mid); len(got) != 1 || got[0].ID != 2 {
				t.Errorf("replaced list: %v", got)
			}
			if got := old.get(mid); got[0].ID != 1 {
				t.Errorf("the older set sees the replacement: %v", got)
			}
			r = r.with(mid, nil)
			if r.get(mid) != nil || len(r) != n-1 {
				t.Errorf("removed node still there: %v", r)
			}
			if r.with("zz", nil) == nil && n > 1 {
				t.Errorf("removing a node not there emptied the set")
			}
			for _, node := range order {
				r = r.with(node, nil)
			}
			if r != nil {
				t.Errorf("left after removing every node: %v", r)
			}
		})
	}
}
