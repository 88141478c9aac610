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
