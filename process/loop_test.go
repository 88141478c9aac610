package process

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/proctor-run/proctor/internal/testutil"
)

func TestLoopRunsInOrderOnOneGoroutine(t *testing.T) {
	l := NewLoop(LoopOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	go l.Run(ctx)
	defer func() { cancel(); <-l.Done() }()
	var state []int // owned by the loop: no lock
	for i := 0; i < 1000; i++ {
		if err := l.Submit(func() { state = append(state, i) }); err != nil {
			t.Fatal(err)
		}
	}
	var got []int
	if err := RunOn(context.Background(), l, CommandFunc(func() error { got = append([]int(nil), state...); return nil }), CallOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("state[%d] = %d", i, v)
		}
	}
	if len(got) != 1000 {
		t.Fatalf("ran %d commands", len(got))
	}
}

func TestLoopLimits(t *testing.T) {
	var warned atomic.Int32
	l := NewLoop(LoopOptions{MaxQueue: 4, WarnQueue: 3, OnWarn: func(int) { warned.Add(1) }})
	// Not running yet: commands queue up to the limit, then are refused.
	for i := 0; i < 4; i++ {
		if err := l.Submit(func() {}); err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
	}
	if err := l.Submit(func() {}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("submit past the limit: %v", err)
	}
	if warned.Load() != 1 {
		t.Fatalf("warned %d times; want once per crossing", warned.Load())
	}
	l.SetLimits(6, 0)
	if err := l.Submit(func() {}); err != nil {
		t.Fatalf("after raising the limit: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go l.Run(ctx)
	eventually(t, "the queued commands to run", func() bool { return l.Len() == 0 })
	cancel()
	<-l.Done()
	if err := l.Submit(func() {}); !errors.Is(err, ErrLoopStopped) {
		t.Fatalf("submit after stop: %v", err)
	}
	if err := RunOn(context.Background(), l, nop, CallOptions{}); !errors.Is(err, ErrLoopStopped) {
		t.Fatalf("call after stop: %v", err)
	}
}

func TestLoopCallHonoursContext(t *testing.T) {
	l := NewLoop(LoopOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	// The loop is not running, so the call cannot complete.
	if err := RunOn(ctx, l, nop, CallOptions{}); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrCallAbandoned) {
		t.Fatalf("call = %v", err)
	}
}

// A command that ran is not kept reachable by the loop's queue: a loop
// whose commands capture a configuration (the registry's reloads) must
// not hold on to every old one until its chunk is recycled. Once idle the
// loop rewinds its chunk: empty, its first slot next.
func TestLoopReleasesCommands(t *testing.T) {
	l := NewLoop(LoopOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	go l.Run(ctx)
	defer func() { cancel(); <-l.Done() }()
	big := new([1 << 20]byte)
	w := weak.Make(big)
	if err := RunOn(context.Background(), l, CommandFunc(func() error { big[0] = 1; return nil }), CallOptions{}); err != nil {
		t.Fatal(err)
	}
	big = nil
	testutil.Eventually(t, "the command's captures are collected", func() bool {
		runtime.GC()
		return w.Value() == nil
	})
	testutil.Eventually(t, "the idle loop rewinds its chunk", func() bool {
		l.q.mu.Lock()
		defer l.q.mu.Unlock()
		return l.q.tailN == 0
	})
	c := l.q.first.Load()
	if c == nil || c.used != 0 {
		t.Fatalf("the idle loop's chunk: %+v", c)
	}
	for i, s := range c.slots {
		if s.fn != nil || s.call != nil {
			t.Fatalf("slot %d of the idle loop's chunk still holds its task", i)
		}
	}
	// The next command goes in the same chunk: a loop's round trip takes
	// no chunk from the pool.
	if err := RunOn(context.Background(), l, nop, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if l.q.first.Load() != c {
		t.Fatal("the loop took another chunk")
	}
}
