package process

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// Notify wakes a goroutine process armed on Wake, as a message does, so
// that code feeding it through a queue of its own needs no wake-up of its
// own; without Arm it signals nothing.
func TestProcNotifyWakesArmedProcess(t *testing.T) {
	n := NewNode(Options{Name: "t", Logger: slog.New(slog.DiscardHandler)})
	var queued atomic.Int64 // a queue of the process's own, fed from outside
	const items = 10000
	handle := make(chan *Proc, 1)
	pid, err := n.SpawnFunc(func(p *Proc) (any, error) {
		handle <- p
		var got int64
		for got < items {
			if queued.Load() > got {
				got++
				continue
			}
			p.Arm()
			if queued.Load() > got {
				p.Disarm()
				continue
			}
			select {
			case <-p.Wake():
				p.Disarm()
			case <-p.Context().Done():
				return got, p.Context().Err()
			}
		}
		return got, nil
	}, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done, exit, ok := n.Done(pid)
	if !ok {
		t.Fatal("the process is gone")
	}
	p := <-handle
	go func() {
		for range items {
			queued.Add(1)
			p.Notify()
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		n.Kill(pid)
		t.Fatal("a Notify was lost: the process still waits")
	}
	if e := exit(); e.Err != nil || e.Value != int64(items) {
		t.Fatalf("exit = %+v", e)
	}
}
