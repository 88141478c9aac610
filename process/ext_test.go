package process

import (
	"testing"
	"unsafe"
)

// Every goroutine process has an extension (its context lives there), so
// its size is a million idle Lua processes' hundreds of megabytes: the
// event queue is made by the first event, not held in it (lazyEvents).
func TestProcExtIsSmall(t *testing.T) {
	if s := unsafe.Sizeof(procExt{}); s > 288 {
		t.Fatalf("procExt is %d bytes, want at most 288 (the size class a million processes pay for)", s)
	}
}

// A process that never got an event has no event queue, and its first
// event makes one bounded by its MaxEvents.
func TestEventQueueMadeByFirstEvent(t *testing.T) {
	n := NewNode(Options{Name: "t"})
	release := make(chan struct{})
	pid, err := n.SpawnFunc(func(h *Proc) (any, error) { <-release; return nil, nil }, SpawnOptions{Limits: Limits{MaxEvents: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer close(release)
	p := n.lookup(pid)
	if q := p.ext.Load().events.q.Load(); q != nil {
		t.Fatal("a process that got no event has an event queue")
	}
	p.deliverEvent(Event{Kind: EventExit})
	p.deliverEvent(Event{Kind: EventExit}) // past MaxEvents: dropped
	if got := p.ext.Load().events.len(); got != 1 {
		t.Fatalf("%d events queued, want 1 (MaxEvents)", got)
	}
}
