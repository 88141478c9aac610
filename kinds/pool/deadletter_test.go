package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// politeReplica answers each ask after its delay through Context.Reply,
// as a script's msg:reply does: the path that reports late replies.
type politeReplica struct {
	delay   time.Duration
	replied *atomic.Int64
}

func (r *politeReplica) Receive(c process.Context, m process.Message) {
	if !m.CanReply() {
		return
	}
	time.Sleep(r.delay)
	c.Reply(&m, "ok", nil)
	r.replied.Add(1)
}

// SPEC: the losers of a scatter are dropped silently — no dead letters.
// A plain send to a scatter pool is a dead letter (no reply target).
func TestScatterLosersAreNoDeadLetters(t *testing.T) {
	h := newHarness(t)
	var replied atomic.Int64
	delays := []time.Duration{time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond}
	replicas(h, func(i int) process.Behavior { return &politeReplica{delay: delays[i], replied: &replied} })
	p := h.start(t, &Spec{Size: 3, Strategy: ScatterGather, Timeout: time.Second})
	if _, _, err := h.node.Ask(p.PID(), process.Message{Topic: "q"}, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every routee replied", func() bool { return replied.Load() == 3 })
	if got := h.dead.all(); len(got) != 0 {
		t.Fatalf("a scatter's losers made dead letters: %+v", got)
	}

	sender, err := h.node.Spawn(&worker{}, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.node.Kill(sender)
	if err := h.node.Send(p.PID(), process.Message{From: sender, Topic: "fire-and-forget"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the tell is a dead letter", func() bool { return len(h.dead.all()) == 1 })
	d := h.dead.all()[0]
	if d.Reason != process.DeadNoReplyTarget || d.To != "app:pool" || d.From != sender || d.Topic != "fire-and-forget" {
		t.Fatalf("dead letter %+v", d)
	}
}

// A routee's reply that comes after the caller's ask timed out is a dead
// letter addressed to the caller.
func TestLateReplyThroughAPoolIsADeadLetter(t *testing.T) {
	h := newHarness(t)
	var replied atomic.Int64
	h.routee("app:worker", func() process.Behavior { return &politeReplica{delay: 100 * time.Millisecond, replied: &replied} })
	p := h.start(t, &Spec{Size: 1, Strategy: RoundRobin})
	asker, err := h.node.Spawn(&worker{}, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.node.Kill(asker)
	if _, _, err := h.node.Ask(p.PID(), process.Message{From: asker, Topic: "slow"}, 10*time.Millisecond); !errors.Is(err, process.ErrTimeout) {
		t.Fatalf("ask: %v", err)
	}
	eventually(t, "the late reply is a dead letter", func() bool { return len(h.dead.all()) == 1 })
	d := h.dead.all()[0]
	if d.Reason != process.DeadLateReply || d.To != asker.String() || d.From != p.snap.Load().pids[0] || d.Topic != "slow" {
		t.Fatalf("dead letter %+v", d)
	}
}

func TestViewShowsMailboxesAndResizes(t *testing.T) {
	h := newHarness(t)
	gate := make(chan struct{})
	got := make(chan process.PID, 16)
	h.routee("app:worker", func() process.Behavior { return &blocker{gate: gate, got: got} })
	p := h.start(t, &Spec{Size: 2})
	defer close(gate)
	for i := 0; i < 5; i++ {
		if err := p.Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	<-got
	<-got // both routees hold one message each and block
	v := p.View().(View)
	if len(v.Mailboxes) != 2 {
		t.Fatalf("mailboxes %+v", v.Mailboxes)
	}
	waiting := 0
	for i, mb := range v.Mailboxes {
		if mb.PID.String() != v.Routees[i] {
			t.Fatalf("mailbox %d is %s, routee %s", i, mb.PID, v.Routees[i])
		}
		waiting += mb.Len
	}
	if waiting != 3 {
		t.Fatalf("%d messages waiting, want 3: %+v", waiting, v.Mailboxes)
	}
	if len(v.Resizes) != 0 {
		t.Fatalf("resizes before any: %+v", v.Resizes)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, size := range []int{4, 3} {
		if ok, err := p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: &Spec{Routee: "app:worker", Size: size, Strategy: RoundRobin, Timeout: DefaultTimeout}}); err != nil || !ok {
			t.Fatalf("update %d: %v %v", i, ok, err)
		}
	}
	v = p.View().(View)
	if len(v.Resizes) != 2 || v.Resizes[0].From != 2 || v.Resizes[0].To != 4 || v.Resizes[1].To != 3 || v.Resizes[1].By != "update" || v.Resizes[1].Time.IsZero() {
		t.Fatalf("resizes %+v", v.Resizes)
	}
}

func TestResizeHistoryIsBounded(t *testing.T) {
	p := &Pool{}
	for i := 0; i < ResizeHistory+5; i++ {
		p.noteResize(i, i+1, "resizer")
	}
	if len(p.resizes) != ResizeHistory || p.resizes[0].From != 5 || p.resizes[ResizeHistory-1].From != ResizeHistory+4 {
		t.Fatalf("history %+v", p.resizes)
	}
}
