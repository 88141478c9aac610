package process

import (
	"context"
	"errors"
	"testing"
	"time"
)

// stopCtx keeps the context contract: Err and Done agree before and
// after cancel (whether Done was made before or after), derived contexts
// are cancelled with it, and AfterFunc runs once or is stopped.
func TestStopCtx(t *testing.T) {
	for _, doneFirst := range []bool{true, false} {
		c := &stopCtx{}
		if doneFirst {
			select {
			case <-c.Done():
				t.Fatal("Done closed before cancel")
			default:
			}
		}
		if c.Err() != nil {
			t.Fatalf("Err before cancel: %v", c.Err())
		}
		child, cancelChild := context.WithCancel(c)
		defer cancelChild()
		timeout, cancelTimeout := context.WithTimeout(c, time.Hour)
		defer cancelTimeout()
		ran := make(chan struct{})
		context.AfterFunc(c, func() { close(ran) })
		stopped := make(chan struct{})
		stop := context.AfterFunc(c, func() { close(stopped) })
		if !stop() {
			t.Fatal("AfterFunc's stop before cancel reported false")
		}
		c.cancel()
		c.cancel() // again: nothing
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("Err after cancel: %v", c.Err())
		}
		for _, d := range []<-chan struct{}{c.Done(), child.Done(), timeout.Done(), ran} {
			select {
			case <-d:
			case <-time.After(10 * time.Second):
				t.Fatalf("doneFirst=%v: not closed after cancel", doneFirst)
			}
		}
		select {
		case <-stopped:
			t.Fatal("a stopped AfterFunc ran")
		default:
		}
		late := make(chan struct{})
		context.AfterFunc(c, func() { close(late) })
		select {
		case <-late:
		case <-time.After(10 * time.Second):
			t.Fatal("AfterFunc after cancel did not run")
		}
	}
}

// A goroutine process spawned without a context of its own sees its
// context cancelled when it is asked to stop.
func TestSpawnFuncContextIsCancelledAtStop(t *testing.T) {
	n := NewNode(Options{Name: "ctx"})
	seen := make(chan error, 1)
	pid, err := n.SpawnFunc(func(h *Proc) (any, error) {
		<-h.Context().Done()
		seen <- h.Context().Err()
		return nil, nil
	}, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Terminate(pid); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-seen:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Err %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the context was not cancelled")
	}
}
