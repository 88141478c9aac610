package process

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// letterBox is a DeadLetterSink that keeps what it is given.
type letterBox struct {
	mu  sync.Mutex
	got []DeadLetter
}

func (b *letterBox) DeadLetter(d DeadLetter) {
	b.mu.Lock()
	b.got = append(b.got, d)
	b.mu.Unlock()
}

func (b *letterBox) take() []DeadLetter {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.got
	b.got = nil
	return out
}

func newLetterNode() (*Node, *letterBox) {
	b := &letterBox{}
	return NewNode(Options{Name: "test", Logger: slog.New(slog.DiscardHandler), DeadLetters: b}), b
}

func TestDeadLettersOfSends(t *testing.T) {
	n, box := newLetterNode()
	sender, _ := n.Spawn(echo, SpawnOptions{})
	defer n.Kill(sender)
	dead, _ := n.Spawn(echo, SpawnOptions{})
	if _, err := n.Stop(context.Background(), dead); err != nil {
		t.Fatal(err)
	}
	full := parked(t, n, SpawnOptions{MailboxSize: 1})
	if err := n.Send(full, Message{Topic: "fill"}); err != nil {
		t.Fatal(err)
	}
	stale := dead
	stale.Creation++
	remote := PID{Node: "elsewhere", ID: 1, Creation: 1}

	tests := []struct {
		name   string
		send   func(m Message) error
		to     string
		reason DeadLetterReason
	}{
		{"dead pid", func(m Message) error { return n.Send(dead, m) }, dead.String(), DeadNoProcess},
		{"earlier incarnation", func(m Message) error { return n.Send(stale, m) }, stale.String(), DeadNoProcess},
		{"zero pid", func(m Message) error { return n.Send(PID{}, m) }, "", DeadNoProcess},
		{"full mailbox", func(m Message) error { return n.Send(full, m) }, full.String(), DeadMailboxFull},
		{"unknown name", func(m Message) error { return n.SendName("test", "nobody", m) }, "nobody", DeadNameNotFound},
		{"no transport", func(m Message) error { return n.Send(remote, m) }, remote.String(), DeadUnreachable},
		{"name on a node without transport", func(m Message) error { return n.SendName("elsewhere", "x", m) }, "x@elsewhere", DeadUnreachable},
		{"inbound to a dead pid", func(m Message) error { return n.Inbound().Send(dead, m) }, dead.String(), DeadNoProcess},
		{"inbound to an unknown name", func(m Message) error { return n.Inbound().SendName("nobody", m) }, "nobody", DeadNameNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			if err := tt.send(Message{From: sender, Topic: "hello", Payload: 1}); err == nil {
				t.Fatal("send succeeded")
			}
			got := box.take()
			if len(got) != 1 {
				t.Fatalf("got %d dead letters, want 1: %+v", len(got), got)
			}
			d := got[0]
			if d.Reason != tt.reason || d.To != tt.to || d.Topic != "hello" || d.From != sender || d.Time.Before(before) {
				t.Fatalf("dead letter %+v; want reason %s to %q topic hello from %s", d, tt.reason, tt.to, sender)
			}
		})
	}

	// Delivered messages, and an invalid address (a caller's error, not a
	// message), are no dead letters.
	if err := n.Send(sender, Message{Topic: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := n.SendName("elsewhere", "", Message{Topic: "bad"}); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("err = %v", err)
	}
	if got := box.take(); len(got) != 0 {
		t.Fatalf("unexpected dead letters %+v", got)
	}
}

func TestDeadLetterOfAskToDeadProcess(t *testing.T) {
	n, box := newLetterNode()
	dead, _ := n.Spawn(echo, SpawnOptions{})
	n.Kill(dead)
	if _, _, err := n.Ask(dead, Message{Topic: "q"}, time.Second); !errors.Is(err, ErrNoProcess) {
		t.Fatalf("err = %v", err)
	}
	if got := box.take(); len(got) != 1 || got[0].Reason != DeadNoProcess || got[0].Topic != "q" {
		t.Fatalf("dead letters %+v", got)
	}
}

func TestCommandsToAStoppedOwnerAreNoDeadLetters(t *testing.T) {
	n, box := newLetterNode()
	pid, o := spawnOwner(t, n, nil)
	n.Kill(pid)
	if err := o.Submit(func() {}); !errors.Is(err, ErrLoopStopped) {
		t.Fatalf("err = %v", err)
	}
	if got := box.take(); len(got) != 0 {
		t.Fatalf("dead letters %+v", got)
	}
}

// A reply after its ask timed out is a dead letter attributed to the
// replier and addressed to the asker; the reply that settles the ask, and
// a reply to a target that is not an ask of the core (a router's race,
// whose losers are dropped silently), are not.
func TestLateReplyIsADeadLetter(t *testing.T) {
	n, box := newLetterNode()
	held := make(chan Message, 1)
	replier, _ := n.Spawn(behaviorFunc(func(c Context, m Message) { held <- m }), SpawnOptions{})
	defer n.Kill(replier)
	asker := spawnCollector(t, n, SpawnOptions{})

	c := NewCall()
	if err := n.Send(replier, c.MessageWithin(Message{From: asker.pid, Topic: "slow"}, 10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(10*time.Millisecond, nil); !errors.Is(err, ErrTimeout) {
		t.Fatalf("wait: %v", err)
	}
	m := <-held
	settled, err := n.Reply(&m, replier, "late", nil)
	if settled || err != nil {
		t.Fatalf("late reply settled=%v err=%v", settled, err)
	}
	got := box.take()
	if len(got) != 1 {
		t.Fatalf("dead letters %+v", got)
	}
	if d := got[0]; d.Reason != DeadLateReply || d.From != replier || d.To != asker.pid.String() || d.Topic != "slow" {
		t.Fatalf("dead letter %+v", d)
	}

	// In time: no dead letter.
	if v, _, err := n.Ask(mustSpawn(t, n, echo), Message{Topic: "fast", Payload: 1.0}, time.Second); err != nil || v != 1.0 {
		t.Fatalf("ask = %v, %v", v, err)
	}
	// AskFunc's late reply, through Context.Reply.
	done := make(chan error, 1)
	n.AskFunc(replier, Message{From: asker.pid, Topic: "slowfunc"}, 10*time.Millisecond, func(_ any, _ PID, err error) { done <- err })
	if err := <-done; !errors.Is(err, ErrTimeout) {
		t.Fatalf("AskFunc: %v", err)
	}
	m = <-held
	Context{n.lookup(replier)}.Reply(&m, "late", nil)
	if got := box.take(); len(got) != 1 || got[0].Reason != DeadLateReply || got[0].Topic != "slowfunc" {
		t.Fatalf("dead letters %+v", got)
	}

	// A reply target of another kind that refuses a reply stays silent.
	var quiet refusing
	m = Message{From: asker.pid, Topic: "race"}.WithReply(&quiet, 1)
	if settled, err := n.Reply(&m, replier, "loser", nil); settled || err != nil {
		t.Fatalf("settled=%v err=%v", settled, err)
	}
	// A second reply to a settled ask of the core is late.
	c = NewCall()
	m = c.Message(Message{From: asker.pid, Topic: "twice"})
	if settled, _ := n.Reply(&m, replier, 1, nil); !settled {
		t.Fatal("first reply did not settle")
	}
	if _, err := c.Wait(time.Second, nil); err != nil {
		t.Fatal(err)
	}
	if settled, _ := n.Reply(&m, replier, 2, nil); settled {
		t.Fatal("second reply settled")
	}
	if got := box.take(); len(got) != 1 || got[0].Topic != "twice" {
		t.Fatalf("dead letters %+v", got)
	}
}

type refusing struct{}

func (*refusing) Settle(uint64, PID, any, error) bool { return false }

func mustSpawn(t *testing.T, n *Node, b Behavior) PID {
	t.Helper()
	pid, err := n.Spawn(b, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Kill(pid) })
	return pid
}

func TestDeadLetterWithoutSink(t *testing.T) {
	n := newTestNode()
	n.DeadLetter(DeadLetter{Reason: DeadNoProcess}) // no sink: nothing to do, no panic
	if err := n.Send(PID{Node: "test", ID: 999, Creation: n.Creation()}, Message{}); !errors.Is(err, ErrNoProcess) {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkSendWithDeadLetterSink: a delivered message costs the same with
// a sink as without (compare with BenchmarkSendNoSink).
func BenchmarkSendWithDeadLetterSink(b *testing.B) { benchSend(b, &letterBox{}) }

func BenchmarkSendNoSink(b *testing.B) { benchSend(b, nil) }

func benchSend(b *testing.B, sink DeadLetterSink) {
	o := Options{Name: "bench", Logger: slog.New(slog.DiscardHandler)}
	if sink != nil {
		o.DeadLetters = sink
	}
	n := NewNode(o)
	pid, _ := n.Spawn(behaviorFunc(func(Context, Message) {}), SpawnOptions{})
	defer n.Kill(pid)
	m := Message{Topic: "t", Payload: 1}
	b.ReportAllocs()
	for b.Loop() {
		if err := n.Send(pid, m); err != nil {
			b.Fatal(err)
		}
	}
}
