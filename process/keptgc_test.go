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

// Kept timers hold their records weakly. A record a caller
// waits on must stay reachable (the caller's stack, a message's reply)
// so its timeout fires; collections meanwhile must not lose it.

// Asks whose message is dropped at once (nobody holds the reply but the
// caller) and asks whose message sits in a mailbox nobody reads, each
// waited on with a short timeout while collections run back to back:
// every Wait returns ErrTimeout, promptly.
func TestAskTimeoutSurvivesCollections(t *testing.T) {
	defer collectBackToBack()()

	var held sync.Mutex
	var mailbox []Message // a mailbox nobody reads
	var late atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				c := NewCall()
				m := c.MessageWithin(Message{}, 5*time.Millisecond)
				if g%2 == 0 {
					held.Lock()
					mailbox = append(mailbox, m)
					held.Unlock()
				}
				m = Message{}
				began := time.Now()
				_, err := c.Wait(5*time.Millisecond, nil)
				if !errors.Is(err, ErrTimeout) {
					t.Errorf("wait: %v", err)
					return
				}
				if time.Since(began) > 2*time.Second {
					late.Add(1)
				}
			}
		}(g)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("a caller was left waiting: its timeout never fired")
	}
	if n := late.Load(); n > 0 {
		t.Errorf("%d waits of 5ms took over 2s", n)
	}
	// Late replies to the mailbox's asks, after their refs were reused or
	// collected, are dropped.
	for _, m := range mailbox {
		m.Reply(PID{}, 1, nil)
	}
}

// RunOn calls whose command the owner never runs (a loop that is not
// running) time out while collections run.
func TestRunOnTimeoutSurvivesCollections(t *testing.T) {
	l := NewLoop(LoopOptions{})
	defer collectBackToBack()()
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				err := RunOn(context.Background(), l, CommandFunc(func() error { return nil }), CallOptions{Timeout: 5 * time.Millisecond})
				if !errors.Is(err, ErrCallTimeout) && !errors.Is(err, ErrQueueFull) {
					t.Errorf("RunOn: %v", err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("a RunOn caller was left waiting")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.Run(ctx)
}

// collectBackToBack runs collections one after another on a goroutine
// of its own until the returned func is called, which waits for it.
func collectBackToBack() (stop func()) {
	done := make(chan struct{})
	var gcs sync.WaitGroup
	gcs.Add(1)
	go func() {
		defer gcs.Done()
		for {
			select {
			case <-done:
				return
			default:
				runtime.GC()
			}
		}
	}()
	return func() { close(done); gcs.Wait() }
}
