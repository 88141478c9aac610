package process

import (
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/proctor-run/proctor/value"
)

// A popped event is not kept by its queue once its process waits again:
// an EXIT carries its process's exit reason, and a dynamic supervisor whose
// temporary children crashed with 8 MiB errors kept every one of them
// (240 MB after 30 crashes) in the slots of its event queue.
func TestPoppedEventsAreNotKept(t *testing.T) {
	n := NewNode(Options{Name: "test", Logger: slog.New(slog.DiscardHandler)})
	seen := make(chan struct{}, 1)
	watcher, err := n.SpawnFunc(func(p *Proc) (any, error) {
		for {
			if _, ok := p.TryEvent(); ok {
				seen <- struct{}{}
				continue
			}
			p.Arm()
			if p.PendingEvents() > 0 {
				p.Disarm()
				continue
			}
			select {
			case <-p.Wake():
			case <-p.Context().Done():
				return nil, nil
			}
		}
	}, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Kill(watcher)
	reasons := make(chan error, 1)
	big := &value.Error{Kind: value.KindInternal, Message: strings.Repeat("E", 1<<20)}
	gone := weak.Make(big)
	child, err := n.SpawnFunc(func(*Proc) (any, error) { return nil, <-reasons }, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Monitor(watcher, child); err != nil {
		t.Fatal(err)
	}
	reasons <- big
	big = nil
	<-seen
	deadline := time.Now().Add(10 * time.Second)
	for gone.Value() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the exit reason of a handled EXIT is still reachable")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
