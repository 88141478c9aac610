package process

import (
	"testing"
)

// A goroutine process that waits for a timer or a reply (Busy) is not
// Idle, parked or suspended, so a router does not retire it mid-work; one
// that waits for mail is.
func TestBusyProcessIsNotIdle(t *testing.T) {
	n := newTestNode()
	waits := make(chan bool)     // true: wait busy; false: wait for mail
	woken := make(chan struct{}) // the wait ended and the mailbox is drained
	pid, err := n.SpawnFunc(func(h *Proc) (any, error) {
		for busy := range waits {
			h.Busy(busy)
			h.Arm()
			select {
			case <-h.Wake():
			case <-h.Context().Done():
				return nil, nil
			}
			h.Disarm()
			for {
				if _, ok := h.TryReceive(); !ok {
					break
				}
			}
			woken <- struct{}{}
		}
		return nil, nil
	}, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Kill(pid)
	parked := func() bool {
		p := n.lookup(pid)
		return p != nil && p.wait.Load() == waitArmed
	}
	for _, busy := range []bool{true, false, true} {
		waits <- busy
		eventually(t, "the process to park", parked)
		if n.Idle(pid) == busy {
			t.Fatalf("waiting busy=%v, Idle says %v", busy, n.Idle(pid))
		}
		// The wait ends on a wake-up (a timer's, say), here a message's.
		if err := n.Send(pid, Message{Topic: "wake"}); err != nil {
			t.Fatal(err)
		}
		<-woken
	}
	close(waits)
}
