package supervisor

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/registry"
)

// TestViewMarksTruncation: a tree deeper than MaxViewDepth is cut with an
// explicit marker on the last child shown, never silently.
func TestViewMarksTruncation(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	const levels = MaxViewDepth + 3
	for i := levels; i >= 1; i-- {
		child := ChildSpec{ID: "leaf", Process: "t:w"}
		if i < levels {
			child = ChildSpec{ID: "next", Process: registry.ID(fmt.Sprintf("t:s%d", i+1))}
		}
		f.addSup(registry.ID(fmt.Sprintf("t:s%d", i)), &Spec{Kind: KindStatic, Strategy: OneForOne, Children: []ChildSpec{child}})
	}
	top := f.start("t:s0", &Spec{Kind: KindStatic, Strategy: OneForOne, Children: []ChildSpec{{ID: "next", Process: "t:s1"}}})

	v := top.Tree()
	depth := 0
	var cut ChildView
	for {
		c := v.Children[0]
		if c.Tree == nil {
			if !c.Truncated || c.PID == nil {
				t.Fatalf("cut at depth %d without a marker: %+v", depth, c)
			}
			cut = c
			break
		}
		if c.Truncated {
			t.Fatalf("depth %d: truncated and shown", depth)
		}
		v = c.Tree
		depth++
	}
	if depth != MaxViewDepth {
		t.Fatalf("cut at depth %d, want %d", depth, MaxViewDepth)
	}
	b, _ := json.Marshal(top.Tree())
	if n := strings.Count(string(b), `"truncated":true`); n != 1 {
		t.Fatalf("JSON has %d markers", n)
	}
	// The rest is the view of the truncated child's own supervisor, whole.
	rest, err := registry.Find[*Supervisor](f.env, "supervisor", *cut.PID)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(rest.Tree()); strings.Contains(string(b), `"truncated"`) || !strings.Contains(string(b), `"leaf"`) {
		t.Fatalf("the rest of the tree: %s", b)
	}
}

var _ registry.PagedViewer = (*Supervisor)(nil)

// A view shows a page of the children with their total and the marker, and
// one view shows at most a budget of children across its levels.
func TestViewIsPaged(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	var ids []string
	for i := range 30 {
		ids = append(ids, fmt.Sprintf("w%d", i))
	}
	f.addSup("t:inner", &Spec{Kind: KindStatic, Strategy: OneForOne, Children: kids(ids...)})
	top := f.start("t:top", &Spec{Kind: KindStatic, Strategy: OneForOne, Children: append(kids(ids[:20]...), ChildSpec{ID: "inner", Process: "t:inner"})})

	v := top.ViewPage(registry.ViewPage{Offset: 15, Limit: 10}).(*TreeView)
	if v.ChildrenTotal != 21 || !v.Truncated || len(v.Children) != 6 || v.Children[0].ID != "w15" || v.Children[5].ID != "inner" {
		t.Fatalf("page: total %d truncated %v children %d", v.ChildrenTotal, v.Truncated, len(v.Children))
	}
	in := v.Children[5].Tree
	if in == nil || in.ChildrenTotal != 30 || !in.Truncated || len(in.Children) != 10 {
		t.Fatalf("nested page: %+v", in)
	}
	if v := top.Tree(); v.Truncated || len(v.Children) != 21 || v.Children[20].Tree.Truncated {
		t.Fatalf("the default page cut a small tree")
	}
	// The budget: 21 at the top leave 4 for the nested tree.
	budget := 25
	v = top.tree(0, 0, 100, &budget)
	if in := v.Children[20].Tree; in == nil || len(in.Children) != 4 || !in.Truncated || in.ChildrenTotal != 30 {
		t.Fatalf("past the budget: %+v", v.Children[20])
	}
	budget = 21
	if v = top.tree(0, 0, 100, &budget); v.Children[20].Tree != nil || !v.Children[20].Truncated {
		t.Fatalf("no budget left: %+v", v.Children[20])
	}
}
