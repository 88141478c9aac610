package process

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// recorder is a LoopProcess whose state (log) only the loop touches.
type recorder struct {
	log     []string
	flushes int
}

func (r *recorder) Receive(m Message)    { r.log = append(r.log, "mail "+m.Topic) }
func (r *recorder) ReceiveEvent(e Event) { r.log = append(r.log, "event "+e.Kind.String()) }
func (r *recorder) Flush()               { r.flushes++ }

// A loop run as a process takes its commands, its mail and its events on
// the one goroutine, calls Flush after the work of each round, and stops
// with the process: queued and later commands fail with ErrLoopStopped.
func TestLoopRunProc(t *testing.T) {
	n := NewNode(Options{Name: "t"})
	l := NewLoop(LoopOptions{})
	rec := &recorder{}
	pid, err := n.SpawnFunc(func(h *Proc) (any, error) {
		l.RunProc(h, rec)
		return nil, nil
	}, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watched, err := n.SpawnFunc(func(h *Proc) (any, error) {
		_, err := h.Receive(context.Background())
		return nil, err
	}, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Monitor(pid, watched); err != nil {
		t.Fatal(err)
	}
	if err := n.Send(pid, Message{Topic: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Send(watched, Message{Topic: "go"}); err != nil { // it exits
		t.Fatal(err)
	}
	want := []string{"event EXIT", "mail a"} // sorted: the two sources have no order between them
	deadline := time.Now().Add(20 * time.Second)
	for {
		var got []string
		var flushes int
		if err := RunOn(context.Background(), l, CommandFunc(func() error {
			got, flushes = slices.Sorted(slices.Values(rec.log)), rec.flushes
			return nil
		}), CallOptions{}); err != nil {
			t.Fatal(err)
		}
		if len(got) == len(want) && got[0] == want[0] && got[1] == want[1] && flushes > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the loop saw %q (%d flushes), want %q", got, flushes, want)
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := n.Stop(context.Background(), pid); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the loop outlived its process")
	}
	if err := l.Submit(func() {}); !errors.Is(err, ErrLoopStopped) {
		t.Fatalf("submit after the process stopped: %v", err)
	}
}

// signaller is a LoopProcess that reports each message it handles.
type signaller struct{ mail chan string }

func (s signaller) Receive(m Message) { s.mail <- m.Topic }
func (signaller) ReceiveEvent(Event)  {}
func (signaller) Flush()              {}

// A loop run as a process parks on its process's one wake-up: commands,
// urgent commands, mail and the end of the context all wake it. Each round
// here lets the loop go idle, then wakes it from one source alone, so that
// a source whose wake-up is lost leaves its work waiting: the test then
// times out rather than pass.
func TestLoopRunProcWakesForEverySource(t *testing.T) {
	n := NewNode(Options{Name: "t"})
	l := NewLoop(LoopOptions{})
	sig := signaller{mail: make(chan string, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	pid, err := n.SpawnFunc(func(h *Proc) (any, error) {
		l.RunProc(h, sig)
		return nil, nil
	}, SpawnOptions{Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	const wait = 10 * time.Second
	for i := range 300 {
		switch i % 3 {
		case 0: // a command alone
			if err := RunOn(context.Background(), l, CommandFunc(func() error { return nil }), CallOptions{Timeout: wait}); err != nil {
				t.Fatalf("round %d: a command: %v", i, err)
			}
		case 1: // urgent work alone
			done := make(chan struct{})
			if err := l.SubmitUrgent(func() { close(done) }); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(wait):
				t.Fatalf("round %d: urgent work never ran", i)
			}
		case 2: // mail alone
			if err := n.Send(pid, Message{Topic: "m"}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-sig.mail:
			case <-time.After(wait):
				t.Fatalf("round %d: mail never handled", i)
			}
		}
		if i%16 == 0 {
			// Let it go idle: the next wake-up finds it parked.
			time.Sleep(time.Millisecond)
		}
	}
	// The end of the context alone wakes it too.
	time.Sleep(time.Millisecond)
	cancel()
	select {
	case <-l.Done():
	case <-time.After(2 * wait):
		t.Fatal("the loop did not end with its context")
	}
}
