package process

import (
	"testing"
	"time"
	"unsafe"
)

// Tells share their meta while the topic stays the same, so a tell
// allocates nothing; what each message opens to is still its own topic,
// sender and reply target.
func TestTellsShareMeta(t *testing.T) {
	n := newTestNode()
	hold := make(chan struct{})
	defer close(hold)
	// A goroutine process that never receives: the envelopes stay queued.
	to, err := n.SpawnFunc(func(p *Proc) (any, error) {
		select {
		case <-hold:
		case <-p.Context().Done():
		}
		return nil, nil
	}, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Kill(to)
	from := mustSpawn(t, n, behaviorFunc(func(Context, Message) {}))
	c := NewCall()
	defer c.Abandon(nil)
	sends := []Message{
		{Topic: "a", Payload: 1},
		{Topic: "a", Payload: 2},
		{Topic: "b", Payload: 3},
		{Topic: "a", From: from, Payload: 4},
		{Topic: "a", From: from, Payload: 5},
		{Topic: "b", From: from, Payload: 6},
		{Payload: 7},
		c.Message(Message{Topic: "a", Payload: 8}),
	}
	for _, m := range sends {
		if err := n.Send(to, m); err != nil {
			t.Fatal(err)
		}
	}
	p := n.lookup(to)
	var envs []envelope
	for {
		e, ok := p.mb.pop()
		if !ok {
			break
		}
		envs = append(envs, e)
	}
	if len(envs) != len(sends) {
		t.Fatalf("%d queued, want %d", len(envs), len(sends))
	}
	for i, e := range envs {
		m := e.open()
		if m.Topic != sends[i].Topic || m.From != sends[i].From || m.Payload != sends[i].Payload || m.CanReply() != sends[i].CanReply() {
			t.Errorf("message %d opened as %+v, sent %+v", i, m, sends[i])
		}
	}
	same := [][2]int{{0, 1}, {3, 4}}
	for _, s := range same {
		if envs[s[0]].meta != envs[s[1]].meta {
			t.Errorf("tells %d and %d (same sender and topic) do not share a meta", s[0], s[1])
		}
	}
	if envs[6].meta != nil {
		t.Errorf("a tell with no topic and no sender carries a meta")
	}

	// Steady state: a tell allocates nothing (its chunk is recycled).
	allocs := testing.AllocsPerRun(1000, func() {
		_ = n.Send(to, Message{Topic: "a", Payload: 1})
		p.mb.pop()
		_ = n.Send(to, Message{Topic: "a", From: from, Payload: 1})
		p.mb.pop()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per pair of tells", allocs)
	}
}

// A message received as Received reads as the Message it was sent as:
// topic, sender, payload and reply target, and it is a third of its size.
func TestReceivedOpensToTheMessage(t *testing.T) {
	if s := unsafe.Sizeof(Received{}); s != 24 {
		t.Fatalf("Received is %d bytes, want 24", s)
	}
	n := newTestNode()
	from := mustSpawn(t, n, behaviorFunc(func(Context, Message) {}))
	c := NewCall()
	sends := []Message{
		{Topic: "a", Payload: 1},
		{Topic: "a", From: from, Payload: 2},
		{Payload: 3},
		c.Message(Message{Topic: "q", From: from, Payload: 4}),
	}
	got := make(chan []Received, 1)
	sent := make(chan struct{})
	to, err := n.SpawnFunc(func(p *Proc) (any, error) {
		<-sent // every message is in the mailbox
		var rs []Received
		for {
			r, ok := p.TryReceived()
			if !ok {
				break
			}
			rs = append(rs, r)
		}
		got <- rs
		return nil, nil
	}, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range sends {
		if err := n.Send(to, m); err != nil {
			t.Fatal(err)
		}
	}
	close(sent)
	rs := <-got
	if len(rs) != len(sends) {
		t.Fatalf("received %d messages, sent %d", len(rs), len(sends))
	}
	for i, r := range rs {
		s := sends[i]
		m := r.Message()
		if r.Topic() != s.Topic || r.From() != s.From || r.Payload != s.Payload || r.CanReply() != s.CanReply() ||
			m.Topic != s.Topic || m.From != s.From || m.Payload != s.Payload || m.CanReply() != s.CanReply() {
			t.Errorf("message %d received as %+v (opened %+v), sent %+v", i, r, m, s)
		}
	}
	q := rs[3].Message()
	if settled, err := q.Reply(to, "answer", nil); !settled || err != nil {
		t.Fatalf("reply through the opened ask: %v, %v", settled, err)
	}
	if r, err := c.Wait(time.Minute, nil); r.Value != "answer" || err != nil {
		t.Fatalf("the asker got %+v, %v", r, err)
	}
	rs[0].Payload = "converted"
	if m := rs[0].Message(); m.Payload != "converted" || m.Topic != "a" {
		t.Fatalf("a replaced payload opens as %+v", m)
	}
}
