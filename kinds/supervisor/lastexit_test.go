package supervisor

import (
	"testing"
)

// A child's last exit reason shows in its info and the tree view, and is
// kept across its restart.
func TestLastExitInView(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:sup", &Spec{MaxRestarts: 5, Children: []ChildSpec{{ID: "a", Process: "t:w"}, {ID: "b", Process: "t:w"}}})
	if c := infoOf(t, s, "a"); c.LastExit != "" {
		t.Fatalf("last exit before any: %q", c.LastExit)
	}
	old := infoOf(t, s, "a").PID
	send(t, f.env.Node, old, "crash")
	waitRunning(t, s, "a", old)
	if c := infoOf(t, s, "a"); c.LastExit != "boom" || c.Restarts != 1 {
		t.Fatalf("after a crash: %+v", c)
	}
	old = infoOf(t, s, "b").PID
	send(t, f.env.Node, old, "exit")
	waitRunning(t, s, "b", old)
	tree := s.Tree()
	if tree.Children[0].LastExit != "boom" || tree.Children[1].LastExit != "normal" {
		t.Fatalf("view children %+v", tree.Children)
	}
}
