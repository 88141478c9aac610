package pgscope

import (
	"context"
	"fmt"
	"testing"

	"github.com/proctor-run/proctor/process"
)

// A batch of insertions builds the same trie as one insertion at a time,
// copies each node at most once, and never changes a version that was
// published (the batch's start, or one it published midway).
func TestHAMTBatch(t *testing.T) {
	cell := func(k string) *groupCell { return &groupCell{name: k} }
	var base *hnode
	ref := map[string]*groupCell{}
	for i := range 2000 {
		k := fmt.Sprintf("g%d", i)
		c := cell(k)
		base, _ = base.with(hashGroup(k), c, 0)
		ref[k] = c
	}
	baseRef := make(map[string]*groupCell, len(ref))
	for k, c := range ref {
		baseRef[k] = c
	}
	tr := htransient{}
	root := base
	var mid *hnode
	midRef := map[string]*groupCell{}
	for i := range 3000 {
		// New names, and some replaced ones (an existing cell's slot).
		k := fmt.Sprintf("n%d", i)
		if i%10 == 0 {
			k = fmt.Sprintf("g%d", i)
		}
		c := cell(k)
		var added bool
		root, added = root.withIn(&tr, hashGroup(k), c, 0)
		if _, had := ref[k]; added == had {
			t.Fatalf("withIn(%s) added=%v had=%v", k, added, had)
		}
		ref[k] = c
		if i == 1500 {
			// Published midway: its nodes are the readers' from now on.
			mid = root
			for k, c := range ref {
				midRef[k] = c
			}
			tr.reset()
		}
	}
	// Colliding full hashes make buckets inside the batch too.
	const h = uint64(0xfeedface)
	for _, k := range []string{"c1", "c2", "c3"} {
		c := &groupCell{name: k}
		root, _ = root.withIn(&tr, h, c, 0)
		ref[k] = c
	}
	checkTrie(t, root, ref)
	checkTrie(t, mid, midRef)
	checkTrie(t, base, baseRef)

	// 100 new groups into 10,000: a batch copies the upper nodes once.
	big := base
	for i := range 10000 {
		k := fmt.Sprintf("b%d", i)
		big, _ = big.with(hashGroup(k), cell(k), 0)
	}
	insert := func(batch bool) float64 {
		return testing.AllocsPerRun(20, func() {
			var tr *htransient
			if batch {
				tr = &htransient{}
			}
			r := big
			for i := range 100 {
				k := fmt.Sprintf("x%d", i)
				r, _ = r.withIn(tr, hashGroup(k), &groupCell{name: k}, 0)
			}
		})
	}
	one, batched := insert(false), insert(true)
	if batched > one*0.75 {
		t.Fatalf("100 insertions allocate %.0f in a batch, %.0f one at a time", batched, one)
	}
	t.Logf("100 insertions into 12,000: %.0f allocations one at a time, %.0f in a batch", one, batched)
}

// A peer's sync of many new groups is one batch; its events are offered
// only once the groups are visible, as outside a batch: a Sink (called on
// the loop) that reads the group finds it.
func TestBatchEventsFollowTheIndex(t *testing.T) {
	h := newHarness(t, nil)
	remote := process.PID{Node: "n2", ID: 7, Creation: 1}
	var missing []string
	seen := 0
	sub, _, err := h.s.SubscribeAll(SubscribeOptions{Sink: sinkFunc(func(ev Event) bool {
		seen++
		if ev.Kind == MemberJoined && len(h.s.GetMembers(ev.Group)) == 0 {
			missing = append(missing, ev.Group)
		}
		return true
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(false)
	groups := map[string][]process.PID{}
	for i := range 200 {
		groups[fmt.Sprintf("g%03d", i)] = []process.PID{remote}
	}
	h.must(h.s.ApplySync(context.Background(), "n2", groups))
	var n int
	h.must(h.s.Do(func() error { n = seen; return nil }))
	if n != len(groups) || len(missing) > 0 {
		t.Fatalf("%d events for %d groups; %d offered before their group was visible (first %v)", n, len(groups), len(missing), missing[:min(1, len(missing))])
	}
	if got := len(h.s.WhichGroups()); got != len(groups) {
		t.Fatalf("%d groups visible, want %d", got, len(groups))
	}
}

type sinkFunc func(Event) bool

func (f sinkFunc) Offer(ev Event) bool { return f(ev) }
func (sinkFunc) Close()                {}
