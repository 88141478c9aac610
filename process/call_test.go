package process

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// nop is a command that does nothing.
var nop = CommandFunc(func() error { return nil })

// runLoop starts l and stops it at cleanup, or when cancel is called.
func runLoop(t testing.TB, l *Loop) (cancel func()) {
	ctx, cancel := context.WithCancel(context.Background())
	go l.Run(ctx)
	t.Cleanup(func() { cancel(); <-l.Done() })
	return cancel
}

// blockLoop parks a running loop on a command until release is called.
func blockLoop(t testing.TB, l *Loop) (release func()) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	if err := l.Submit(func() { close(entered); <-gate }); err != nil {
		t.Fatal(err)
	}
	<-entered
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return release
}

func TestCallReturnsTheCommandsResult(t *testing.T) {
	l := NewLoop(LoopOptions{})
	runLoop(t, l)
	owned := 0 // loop state: touched by commands only
	boom := errors.New("boom")
	for i := range 3 {
		err := RunOn(context.Background(), l, CommandFunc(func() error {
			owned++
			if i == 2 {
				return boom
			}
			return nil
		}), CallOptions{Timeout: 5 * time.Second})
		if i < 2 && err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if i == 2 && err != boom {
			t.Fatalf("call 2 returned %v, want the command's own error", err)
		}
	}
	got := 0
	if err := RunOn(context.Background(), l, CommandFunc(func() error { got = owned; return nil }), CallOptions{}); err != nil || got != 3 {
		t.Fatalf("state %d, %v", got, err)
	}
}

// What a caller sees when its command does not run, and when it runs but
// too late: each failure has its own sentinel, and none hangs.
func TestCallFailures(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T) (context.Context, Owner, CallOptions)
		want  []error
	}{
		{"queue full", func(t *testing.T) (context.Context, Owner, CallOptions) {
			l := NewLoop(LoopOptions{MaxQueue: 1})
			runLoop(t, l)
			blockLoop(t, l)
			if err := l.Submit(func() {}); err != nil {
				t.Fatal(err)
			}
			return context.Background(), l, CallOptions{}
		}, []error{ErrQueueFull}},
		{"stopped before", func(t *testing.T) (context.Context, Owner, CallOptions) {
			l := NewLoop(LoopOptions{})
			runLoop(t, l)()
			<-l.Done()
			return context.Background(), l, CallOptions{}
		}, []error{ErrLoopStopped}},
		{"stopped while queued", func(t *testing.T) (context.Context, Owner, CallOptions) {
			l := NewLoop(LoopOptions{})
			cancel := runLoop(t, l)
			release := blockLoop(t, l)
			time.AfterFunc(20*time.Millisecond, func() { cancel(); release() })
			return context.Background(), l, CallOptions{}
		}, []error{ErrLoopStopped}},
		{"stopped by the command ahead", func(t *testing.T) (context.Context, Owner, CallOptions) {
			// A command that ends the loop's goroutine (a test's FailNow,
			// a bug) fails what is queued behind it.
			l := NewLoop(LoopOptions{})
			runLoop(t, l)
			release := blockLoop(t, l)
			if err := l.Submit(func() { runtime.Goexit() }); err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(20*time.Millisecond, release)
			return context.Background(), l, CallOptions{}
		}, []error{ErrLoopStopped}},
		{"stopped by the urgent work ahead", func(t *testing.T) (context.Context, Owner, CallOptions) {
			l := NewLoop(LoopOptions{})
			runLoop(t, l)
			release := blockLoop(t, l)
			if err := l.SubmitUrgent(func() { runtime.Goexit() }); err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(20*time.Millisecond, release)
			return context.Background(), l, CallOptions{Urgent: true}
		}, []error{ErrLoopStopped}},
		{"timeout", func(t *testing.T) (context.Context, Owner, CallOptions) {
			l := NewLoop(LoopOptions{})
			runLoop(t, l)
			blockLoop(t, l)
			return context.Background(), l, CallOptions{Timeout: 20 * time.Millisecond}
		}, []error{ErrCallTimeout}},
		{"caller gone", func(t *testing.T) (context.Context, Owner, CallOptions) {
			l := NewLoop(LoopOptions{})
			runLoop(t, l)
			blockLoop(t, l)
			ctx, cancel := context.WithCancelCause(context.Background())
			why := errors.New("process terminated")
			time.AfterFunc(20*time.Millisecond, func() { cancel(why) })
			return ctx, l, CallOptions{}
		}, []error{ErrCallAbandoned}},
		{"no urgent lane", func(t *testing.T) (context.Context, Owner, CallOptions) {
			n := NewNode(Options{Name: "t"})
			pid, o := spawnOwner(t, n, nil)
			t.Cleanup(func() { _, _ = n.Stop(context.Background(), pid) })
			return context.Background(), o, CallOptions{Urgent: true}
		}, []error{errNotUrgent}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, o, opts := tc.setup(t)
			callFails(t, ctx, o, nop, opts, tc.want...)
		})
	}
}

// callFails runs cmd on o and checks that the call fails with every one
// of want, within 5 s.
func callFails(t *testing.T, ctx context.Context, o Owner, cmd Command, opts CallOptions, want ...error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- RunOn(ctx, o, cmd, opts) }()
	select {
	case err := <-done:
		for _, w := range want {
			if !errors.Is(err, w) {
				t.Fatalf("err = %v, want %v", err, w)
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call hangs")
	}
}

// A command that ends the loop's goroutine fails its own call: the loop
// settles the call it was running as it stops, since the caller waits on
// the call alone.
func TestCallEndedByItsOwnCommand(t *testing.T) {
	l := NewLoop(LoopOptions{})
	runLoop(t, l)
	exits := CommandFunc(func() error { runtime.Goexit(); return nil })
	callFails(t, context.Background(), l, exits, CallOptions{}, ErrLoopStopped)
}

// A waiter's timer stays set across the calls that reuse it; a call with
// a shorter timeout than the one the timer was set for, or one that comes
// after the timer fired with no call in progress, still times out on time.
func TestCallTimeoutsOnAReusedWaiter(t *testing.T) {
	l := NewLoop(LoopOptions{})
	runLoop(t, l)
	timesOut := func(what string) {
		t.Helper()
		release := blockLoop(t, l)
		defer release()
		done := make(chan error, 1)
		go func() { done <- RunOn(context.Background(), l, nop, CallOptions{Timeout: 20 * time.Millisecond}) }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrCallTimeout) {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: a 20ms call still waits after 5s", what)
		}
	}
	for range 5 {
		// The timer set for an hour, by a call that returns at once.
		if err := RunOn(context.Background(), l, nop, CallOptions{Timeout: time.Hour}); err != nil {
			t.Fatal(err)
		}
		timesOut("after a call with a longer timeout")
		// A short call; its timer most likely fires during the pause,
		// with no call in progress (either way the next call must time
		// out: the pause only makes the lapsed timer the likelier case).
		if err := RunOn(context.Background(), l, nop, CallOptions{Timeout: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		timesOut("after the timer lapsed")
	}
}

// An abandoned call says why: the context's cause is in the chain.
func TestCallAbandonKeepsTheCause(t *testing.T) {
	l := NewLoop(LoopOptions{})
	runLoop(t, l)
	blockLoop(t, l)
	ctx, cancel := context.WithCancelCause(context.Background())
	why := errors.New("process terminated")
	cancel(why)
	err := RunOn(ctx, l, nop, CallOptions{})
	if !errors.Is(err, ErrCallAbandoned) || !errors.Is(err, why) {
		t.Fatalf("err = %v", err)
	}
}

// The urgent lane passes a full queue, and its work runs before the
// commands queued ahead of it.
func TestCallUrgentBypassesTheQueue(t *testing.T) {
	l := NewLoop(LoopOptions{MaxQueue: 1})
	runLoop(t, l)
	release := blockLoop(t, l)
	var order []string // loop-owned
	if err := l.Submit(func() { order = append(order, "queued") }); err != nil {
		t.Fatal(err)
	}
	if err := RunOn(context.Background(), l, nop, CallOptions{Timeout: 10 * time.Millisecond}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("ordinary call on a full queue: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		done <- RunOn(context.Background(), l, CommandFunc(func() error { order = append(order, "urgent"); return nil }), CallOptions{Urgent: true})
	}()
	// The urgent call waits for the command that holds the loop, not for
	// room in the queue.
	select {
	case err := <-done:
		t.Fatalf("urgent call returned %v while the loop was busy", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The queue holds one command: read the order once "queued" has left
	// it, or this call could find the queue still full.
	eventually(t, "the queued command to leave the queue", func() bool { return l.Len() == 0 })
	var got []string
	if err := RunOn(context.Background(), l, CommandFunc(func() error { got = append(got, order...); return nil }), CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "urgent" || got[1] != "queued" {
		t.Fatalf("order = %v, want urgent before queued", got)
	}
}

// Urgent work submitted to an idle loop wakes it.
func TestSubmitUrgentWakesAnIdleLoop(t *testing.T) {
	l := NewLoop(LoopOptions{})
	runLoop(t, l)
	for range 100 {
		ran := make(chan struct{})
		if err := l.SubmitUrgent(func() { close(ran) }); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			t.Fatal("urgent work did not wake the loop")
		}
	}
}

// A call answered just as its timeout fires must not leave that timer's
// late expiry to strike the next call that reuses the pooled waiter: that
// call would report a timeout at once although its command ran. Commands
// here take about as long as the timeout, so answers and expiries keep
// crossing.
func TestCallTimeoutNeverStrikesTheNextCall(t *testing.T) {
	const timeout = time.Millisecond
	l := NewLoop(LoopOptions{})
	runLoop(t, l)
	deadline := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		busy := timeout*3/4 + time.Duration(i%50)*timeout/100
		if err := l.Submit(func() {
			for end := time.Now().Add(busy); time.Now().Before(end); {
			}
		}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := RunOn(context.Background(), l, nop, CallOptions{Timeout: timeout})
		if took := time.Since(start); errors.Is(err, ErrCallTimeout) && took < timeout/2 {
			t.Fatalf("call %d timed out after %s, before its %s timeout", i, took, timeout)
		}
	}
}

// A command that runs after its caller gave up touches nothing of the
// caller's, and the waiter it ran on is not handed to another call.
func TestLateCommandAfterTimeout(t *testing.T) {
	l := NewLoop(LoopOptions{})
	runLoop(t, l)
	release := blockLoop(t, l)
	var ran atomic.Int32
	err := RunOn(context.Background(), l, CommandFunc(func() error { ran.Add(1); return nil }), CallOptions{Timeout: 10 * time.Millisecond})
	if !errors.Is(err, ErrCallTimeout) {
		t.Fatalf("err = %v", err)
	}
	release()
	for i := range 100 {
		if err := RunOn(context.Background(), l, nop, CallOptions{Timeout: 5 * time.Second}); err != nil {
			t.Fatalf("call %d after a late command: %v", i, err)
		}
	}
	if ran.Load() != 1 {
		t.Fatalf("late command ran %d times", ran.Load())
	}
}

// ownerBehavior is a process that makes itself an Owner in Init and hands
// its other messages to other: it never sees a command.
type ownerBehavior struct {
	owner chan Owner
	other chan Message
}

func (b ownerBehavior) Init(c Context) error {
	b.owner <- c.Owner()
	return nil
}

func (b ownerBehavior) Receive(_ Context, m Message) {
	if _, ok := m.Payload.(command); ok {
		panic("Receive was handed a command")
	}
	if b.other != nil {
		b.other <- m
	}
}

// spawnOwner starts an ownerBehavior and returns it with its Owner.
func spawnOwner(t *testing.T, n *Node, other chan Message) (PID, Owner) {
	t.Helper()
	b := ownerBehavior{owner: make(chan Owner, 1), other: other}
	pid, err := n.Spawn(b, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pid, <-b.owner
}

// A process is an Owner once it asks for one (Context.Owner): commands
// run on its goroutine among its messages, its Receive never sees one, and
// its exit fails what is still queued.
func TestProcessOwner(t *testing.T) {
	n := NewNode(Options{Name: "t"})
	other := make(chan Message, 1)
	pid, o := spawnOwner(t, n, other)
	count := 0 // owned by the process
	for range 10 {
		if err := RunOn(context.Background(), o, CommandFunc(func() error { count++; return nil }), CallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	if err := RunOn(context.Background(), o, CommandFunc(func() error { got = count; return nil }), CallOptions{}); err != nil || got != 10 {
		t.Fatalf("count %d, %v", got, err)
	}
	// A message that looks like a command but was not made by an owner is
	// an ordinary message.
	if err := n.Send(pid, Message{Topic: commandTopic, Payload: func() { t.Error("forged command ran") }}); err != nil {
		t.Fatal(err)
	}
	if m := <-other; m.Topic != commandTopic {
		t.Fatalf("got %v", m)
	}
	if _, err := n.Stop(context.Background(), pid); err != nil {
		t.Fatal(err)
	}
	if err := RunOn(context.Background(), o, nop, CallOptions{}); !errors.Is(err, ErrLoopStopped) {
		t.Fatalf("call after exit: %v", err)
	}
}

// A goroutine process that asks for an Owner (Proc.Owner) runs commands
// inside TryReceive and Receive, which return only its other messages.
func TestGoroutineProcessOwner(t *testing.T) {
	n := NewNode(Options{Name: "t"})
	owners := make(chan Owner, 1)
	got := make(chan Message, 1)
	pid, err := n.SpawnFunc(func(h *Proc) (any, error) {
		owners <- h.Owner()
		for {
			m, err := h.Receive(h.Context())
			if err != nil {
				return nil, nil
			}
			if _, ok := m.Payload.(command); ok {
				return nil, errors.New("Receive returned a command")
			}
			got <- m
		}
	}, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := <-owners
	count := 0 // owned by the process
	for range 5 {
		if err := RunOn(context.Background(), o, CommandFunc(func() error { count++; return nil }), CallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Send(pid, Message{Topic: "hello"}); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m.Topic != "hello" {
		t.Fatalf("got %v", m)
	}
	var seen int
	if err := RunOn(context.Background(), o, CommandFunc(func() error { seen = count; return nil }), CallOptions{}); err != nil || seen != 5 {
		t.Fatalf("count %d, %v", seen, err)
	}
	if _, err := n.Stop(context.Background(), pid); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// A process that exits with a command still in its mailbox fails that
// call rather than leaving it waiting.
func TestOwnerExitFailsQueuedCall(t *testing.T) {
	n := NewNode(Options{Name: "t"})
	gate := make(chan struct{})
	pid, o := spawnOwner(t, n, nil)
	// Park the process inside a command, queue another (or not yet: a
	// call to a killed owner fails the same way), then kill it.
	entered := make(chan struct{})
	go func() {
		_ = RunOn(context.Background(), o, CommandFunc(func() error { close(entered); <-gate; return nil }), CallOptions{})
	}()
	<-entered
	done := make(chan error, 1)
	go func() { done <- RunOn(context.Background(), o, nop, CallOptions{}) }()
	if err := n.Kill(pid); err != nil {
		t.Fatal(err)
	}
	close(gate)
	select {
	case err := <-done:
		if !errors.Is(err, ErrLoopStopped) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("queued call hangs after the owner exited")
	}
}

// The hot path allocates nothing: a pooled waiter, its own timer, and a
// command that is not a closure.
func TestCallAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	l := NewLoop(LoopOptions{MaxQueue: 1024})
	runLoop(t, l)
	cmd := &counter{}
	opts := CallOptions{Timeout: 5 * time.Second}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := RunOn(context.Background(), l, cmd, opts); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per call", allocs)
	}
}

type counter struct{ n int }

func (c *counter) Run() error { c.n++; return nil }

// BenchmarkCall: one command run on a loop and waited for, with a deadline.
func BenchmarkCall(b *testing.B) {
	l := NewLoop(LoopOptions{MaxQueue: 1024})
	runLoop(b, l)
	cmd := &counter{}
	opts := CallOptions{Timeout: 5 * time.Second}
	b.ReportAllocs()
	for b.Loop() {
		if err := RunOn(context.Background(), l, cmd, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallContext is BenchmarkCall for a caller with a cancellable
// context (a process that may be asked to stop while it waits).
func BenchmarkCallContext(b *testing.B) {
	l := NewLoop(LoopOptions{MaxQueue: 1024})
	runLoop(b, l)
	cmd := &counter{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if err := RunOn(ctx, l, cmd, CallOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// RunOnAs maps each way a call fails to the caller's own errors, the same
// way for every kind, and leaves the command's own error alone.
func TestRunOnAsMapsFailures(t *testing.T) {
	errStopped := errors.New("thing stopped")
	errTimeout := errors.New("thing timed out")
	errGone := errors.New("caller gone")
	errOwn := errors.New("the command's own")
	as := CallErrors{What: "thing t1", Op: "poke", Stopped: errStopped, Timeout: errTimeout, Abandoned: errGone}
	stopped := NewLoop(LoopOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	go stopped.Run(ctx)
	cancel()
	<-stopped.Done()
	cases := []struct {
		name string
		run  func(t *testing.T, as CallErrors) error
		want []error
		msg  string
	}{
		{"own error", func(t *testing.T, as CallErrors) error {
			l := NewLoop(LoopOptions{})
			runLoop(t, l)
			return RunOnAs(context.Background(), l, CommandFunc(func() error { return errOwn }), CallOptions{}, as)
		}, []error{errOwn}, "the command's own"},
		{"stopped", func(t *testing.T, as CallErrors) error {
			return RunOnAs(context.Background(), stopped, nop, CallOptions{}, as)
		}, []error{errStopped}, "thing t1: poke: thing stopped"},
		{"timeout", func(t *testing.T, as CallErrors) error {
			l := NewLoop(LoopOptions{})
			runLoop(t, l)
			blockLoop(t, l)
			return RunOnAs(context.Background(), l, nop, CallOptions{Timeout: 10 * time.Millisecond}, as)
		}, []error{errTimeout}, "thing t1: poke: thing timed out after 10ms"},
		{"abandoned", func(t *testing.T, as CallErrors) error {
			l := NewLoop(LoopOptions{})
			runLoop(t, l)
			blockLoop(t, l)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(10*time.Millisecond, cancel)
			return RunOnAs(ctx, l, nop, CallOptions{}, as)
		}, []error{errGone, context.Canceled}, "thing t1: poke: caller gone: context canceled"},
		{"queue full", func(t *testing.T, as CallErrors) error {
			l := NewLoop(LoopOptions{MaxQueue: 1})
			if err := l.Submit(func() {}); err != nil {
				t.Fatal(err)
			}
			return RunOnAs(context.Background(), l, nop, CallOptions{}, as)
		}, []error{ErrQueueFull}, "thing t1: poke: queue full"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(t, as)
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("err %v does not match %v", err, w)
				}
			}
			if err == nil || err.Error() != tc.msg {
				t.Errorf("err = %v, want %q", err, tc.msg)
			}
		})
	}
	// With no errors of its own, a caller keeps this package's sentinels.
	t.Run("defaults", func(t *testing.T) {
		if err := RunOnAs(context.Background(), stopped, nop, CallOptions{}, CallErrors{}); !errors.Is(err, ErrLoopStopped) || err.Error() != "loop stopped" {
			t.Errorf("err = %v", err)
		}
	})
}
