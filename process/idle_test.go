package process

import (
	"sync/atomic"
	"testing"
)

// lookingProbe is what whileLooking calls in this test binary: the hook is
// set once, so that no test writes it while a dispatcher reads it.
var lookingProbe atomic.Pointer[func(PID)]

func init() {
	whileLooking = func(pid PID) {
		if f := lookingProbe.Load(); f != nil {
			(*f)(pid)
		}
	}
}

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

// A process that has handled its mail and yields before it looks again (the
// spin before a Behavior's dispatcher ends, or before a goroutine process
// suspends) is idle, as Akka's actor is once its receive has returned: a
// router counting busy routees must not count one that waits in the run
// queue to look for mail (on a loaded machine that wait lasted
// milliseconds, and a pool with one closed-loop client saw every routee
// busy). A wake-up during the spin still reaches it.
func TestLookingProcessIsIdle(t *testing.T) {
	t.Run("behavior", func(t *testing.T) {
		n := newTestNode()
		handled := make(chan struct{}, 16)
		pid, err := n.Spawn(behaviorFunc(func(Context, Message) { handled <- struct{}{} }), SpawnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Kill(pid)
		looked := make(chan bool, 16)
		probe := func(p PID) {
			if p == pid {
				select {
				case looked <- n.Idle(p):
				default:
				}
			}
		}
		lookingProbe.Store(&probe)
		defer lookingProbe.Store(nil)
		if err := n.Send(pid, Message{Topic: "work"}); err != nil {
			t.Fatal(err)
		}
		<-handled
		if idle := <-looked; !idle {
			t.Fatal("a dispatcher that yields before it looks for mail again is not idle")
		}
		// A message sent while it looks is handled, without a second
		// dispatcher.
		if err := n.Send(pid, Message{Topic: "more"}); err != nil {
			t.Fatal(err)
		}
		<-handled
	})
	t.Run("goroutine", func(t *testing.T) {
		n := newTestNode()
		steps := make(chan string)
		seen := make(chan bool)
		pid, err := n.SpawnFunc(func(h *Proc) (any, error) {
			for s := range steps {
				switch s {
				case "look":
					h.Looking()
				case "busy":
					h.Busy(true)
					h.Looking()
				case "run":
					h.Busy(false)
					h.Disarm()
				}
				seen <- true
			}
			return nil, nil
		}, SpawnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Kill(pid)
		for _, c := range []struct {
			step string
			idle bool
		}{{"run", false}, {"look", true}, {"run", false}, {"busy", false}, {"run", false}} {
			steps <- c.step
			<-seen
			if got := n.Idle(pid); got != c.idle {
				t.Errorf("after %s: Idle %v, want %v", c.step, got, c.idle)
			}
		}
		close(steps)
	})
}

// AfterExit runs its function once the process has exited, not before, and
// not at all when the process is gone already.
func TestAfterExit(t *testing.T) {
	n := newTestNode()
	pid, _ := n.Spawn(behaviorFunc(func(Context, Message) {}), SpawnOptions{})
	ran := make(chan struct{})
	if !n.AfterExit(pid, func() { close(ran) }, nil) {
		t.Fatal("AfterExit of a live process reported it gone")
	}
	select {
	case <-ran:
		t.Fatal("ran before the process exited")
	default:
	}
	n.Kill(pid)
	<-ran
	if n.AfterExit(pid, func() { t.Error("ran for a gone process") }, nil) {
		t.Fatal("AfterExit of a gone process reported it alive")
	}
}
