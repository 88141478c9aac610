package pgscope

import "testing"

// Every membership event counts, whether or not anyone listens: the view's
// rate of churn does not depend on a subscriber being open.
func TestEventCount(t *testing.T) {
	h := newHarness(t, nil)
	a, b := h.pid(), h.pid()
	h.must(h.s.Join(a, "g1", "g2")) // two events: joined g1, joined g2
	h.sync()
	if got := h.s.EventCount(); got != 2 {
		t.Fatalf("after a join of two groups: %d events", got)
	}
	sub, _, err := h.s.Events(b)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(false)
	h.must(h.s.Join(b, "g1"))
	next(t, sub)
	h.must(h.s.Leave(a, "g2"))
	next(t, sub)
	h.kill(a) // left g1 by its exit
	next(t, sub)
	if got, view := h.s.EventCount(), h.s.View().(ScopeView).Events; got != 5 || view != 5 {
		t.Fatalf("events %d, view %d; want 5", got, view)
	}
}
