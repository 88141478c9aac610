package pgscope

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// gateSink is a Sink that records what it is offered, and, while its gate
// is shut, holds the delivery that offers it an event (a stand-in for a
// delivery that takes long: many unread subscribers).
type gateSink struct {
	mu      sync.Mutex
	got     []Event
	gate    chan struct{} // nil: never held
	entered chan struct{} // closed at the first held offer
	once    sync.Once
}

func (k *gateSink) Offer(ev Event) bool {
	if k.gate != nil {
		k.once.Do(func() { close(k.entered) })
		<-k.gate
	}
	k.mu.Lock()
	k.got = append(k.got, ev)
	k.mu.Unlock()
	return true
}

func (k *gateSink) Close() {}

func (k *gateSink) events() []Event {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]Event(nil), k.got...)
}

// A group with more subscriptions than the loop offers an event to itself
// is delivered off the loop: while one of its deliveries is held, the
// loop goes on (a join and leave of another group, with subscribers of its
// own, returns), but the Join that raised the held event does not return
// before every one of its subscribers has it. On the old code, where the
// loop delivered every event, the join of "cold" waited for the held one.
func TestSlowGroupDeliveryDelaysOnlyItsGroup(t *testing.T) {
	h := newHarness(t, nil)
	held := &gateSink{gate: make(chan struct{}), entered: make(chan struct{})}
	sinks := []*gateSink{held}
	for range inlineFanout {
		sinks = append(sinks, &gateSink{})
	}
	for _, k := range sinks {
		sub, _, err := h.s.Subscribe("hot", SubscribeOptions{Sink: k})
		h.must(err)
		defer sub.Close(false)
	}
	cold := &gateSink{}
	sub, _, err := h.s.Subscribe("cold", SubscribeOptions{Sink: cold})
	h.must(err)
	defer sub.Close(false)

	ungate := sync.OnceFunc(func() { close(held.gate) })
	defer ungate() // first of the deferred calls: the scope is never left held
	p, q := h.pid(), h.pid()
	joined := make(chan error, 1)
	go func() { joined <- h.s.Join(p, "hot") }()
	select {
	case <-held.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the hot group's event was never offered")
	}
	done := make(chan error, 1)
	go func() {
		if err := h.s.Join(q, "cold"); err != nil {
			done <- err
			return
		}
		done <- h.s.Leave(q, "cold")
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a join and leave of cold beside the held delivery of hot: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a join and leave of cold waited for the hot group's delivery")
	}
	if got := cold.events(); len(got) != 2 || got[0].Kind != MemberJoined || got[1].Kind != MemberLeft {
		t.Fatalf("cold's subscriber got %v when its leave returned", got)
	}
	select {
	case err := <-joined:
		t.Fatalf("the join of hot returned (%v) before its event reached every subscriber", err)
	default:
	}
	ungate()
	h.must(<-joined)
	for i, k := range sinks {
		if got := k.events(); len(got) != 1 || got[0].Kind != MemberJoined || got[0].Group != "hot" {
			t.Fatalf("subscriber %d of hot has %v when the join returned", i, got)
		}
	}
}

// Through the queue, as on the loop, a Join returns with its event in
// every subscriber's buffer and a full buffer already counted as dropped;
// and each subscriber sees the events in the order the loop raised them,
// while subscriptions come and go across the inline bound.
func TestQueuedDeliveryKeepsTheGuarantees(t *testing.T) {
	h := newHarness(t, func(sp *Spec) { sp.MonitorBuffer = 1 })
	subs := make([]*Subscription, 3*inlineFanout)
	for i := range subs {
		sub, _, err := h.s.Monitor(process.PID{}, "g")
		h.must(err)
		subs[i] = sub
		defer sub.Close(false)
	}
	p := h.pid()
	h.must(h.s.Join(p, "g"))
	for i, sub := range subs {
		if n := len(sub.C()); n != 1 {
			t.Fatalf("subscriber %d: %d events buffered when the join returned", i, n)
		}
	}
	h.must(h.s.Leave(p, "g"))
	for i, sub := range subs {
		if d := sub.Dropped(); d != 1 {
			t.Fatalf("subscriber %d: %d dropped when the leave returned, want 1", i, d)
		}
	}

	// Order: sinks that record everything, joined and left while the
	// group's subscriptions cross inlineFanout both ways.
	sinks := make([]*gateSink, 2*inlineFanout)
	var open []*Subscription
	for i := range sinks {
		sinks[i] = &gateSink{}
		sub, _, err := h.s.Subscribe("o", SubscribeOptions{Sink: sinks[i]})
		h.must(err)
		open = append(open, sub)
	}
	var want []string
	for i := range 200 {
		g := []string{"o", "o", "o"}[:1+i%3]
		h.must(h.s.Join(p, g...))
		h.must(h.s.Leave(p, g...))
		want = append(want, fmt.Sprintf("joined %d", len(g)), fmt.Sprintf("left %d", len(g)))
		if i == 100 {
			// Below the bound: the loop offers again, after the queue.
			for _, sub := range open[inlineFanout/2:] {
				sub.Close(false)
			}
		}
	}
	for _, sub := range open {
		sub.Close(false)
	}
	for i, k := range sinks[:inlineFanout/2] {
		got := k.events()
		if len(got) != len(want) {
			t.Fatalf("sink %d: %d events, want %d", i, len(got), len(want))
		}
		for j, ev := range got {
			s := fmt.Sprintf("%s %d", map[EventKind]string{MemberJoined: "joined", MemberLeft: "left"}[ev.Kind], len(ev.PIDs))
			if s != want[j] {
				t.Fatalf("sink %d, event %d: %s, want %s", i, j, s, want[j])
			}
		}
	}
}

// Scope-wide subscriptions past the inline bound are delivered through
// the scope's queue with the same promise, and the events of an exit
// (which nobody waits for) still reach every subscriber.
func TestQueuedScopeWideDelivery(t *testing.T) {
	h := newHarness(t, nil)
	subs := make([]*Subscription, 2*inlineFanout)
	for i := range subs {
		sub, _, err := h.s.SubscribeAll(SubscribeOptions{})
		h.must(err)
		subs[i] = sub
		defer sub.Close(false)
	}
	p := h.pid()
	h.must(h.s.Join(p, "a", "b"))
	for i, sub := range subs {
		if n := len(sub.C()); n != 2 {
			t.Fatalf("subscriber %d: %d events buffered when the join returned, want 2", i, n)
		}
		expectEvent(t, sub, MemberJoined, "a", p)
		expectEvent(t, sub, MemberJoined, "b", p)
	}
	h.kill(p)
	for _, sub := range subs {
		expectEvent(t, sub, MemberLeft, "a", p)
		expectEvent(t, sub, MemberLeft, "b", p)
	}
}
