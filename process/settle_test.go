package process

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proctor-run/proctor/value"
)

// askLong is an ask whose own deadline is far past the test's: only
// settling at the callee's exit answers it in time.
const askLong = time.Minute

// asyncAsk asks pid from a goroutine and returns where its error arrives.
func asyncAsk(n *Node, pid PID, payload any) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, _, err := n.Ask(pid, Message{Topic: "q", Payload: payload}, askLong)
		ch <- err
	}()
	return ch
}

func awaitExited(t *testing.T, ch <-chan error, reason string) *value.Error {
	t.Helper()
	select {
	case err := <-ch:
		if !errors.Is(err, ErrExited) || value.KindOf(err) != value.KindStopped {
			t.Fatalf("ask failed with %v, want kind stopped (ErrExited)", err)
		}
		if !strings.Contains(err.Error(), reason) {
			t.Fatalf("ask error %q does not name the exit reason %q", err, reason)
		}
		return value.FromError(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the ask still waits after its callee exited")
		return nil
	}
}

// waitQueued waits until pid's mailbox holds n messages.
func waitQueued(t *testing.T, n *Node, pid PID, want int) {
	t.Helper()
	eventually(t, "messages queued", func() bool { return n.MailboxLen(pid) >= want })
}

// A Behavior that panics while handling an ask fails that ask and the asks
// queued behind it at once, naming the panic; the cause is the exit reason.
func TestAskFailsWhenBehaviorCrashes(t *testing.T) {
	n := newTestNode()
	entered, release := make(chan struct{}), make(chan struct{})
	pid, err := n.Spawn(behaviorFunc(func(c Context, m Message) {
		if m.Payload == "first" {
			close(entered)
			<-release
			panic("boom")
		}
		c.Reply(&m, m.Payload, nil)
	}), SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := asyncAsk(n, pid, "first")
	<-entered
	queued := []<-chan error{asyncAsk(n, pid, "second"), asyncAsk(n, pid, "third")}
	waitQueued(t, n, pid, 2)
	close(release)
	e := awaitExited(t, first, "panic: boom")
	if e.Cause == nil || e.Cause.Message != "panic: boom" {
		t.Fatalf("cause = %+v, want the exit reason", e.Cause)
	}
	for _, q := range queued {
		awaitExited(t, q, "panic: boom")
	}
}

// Terminate, Kill and a Behavior's own Stop fail what its mailbox holds,
// each naming its reason; a normal stop says so.
func TestAskFailsWhenBehaviorStops(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		stop         func(n *Node, pid PID)
	}{
		{"terminate", "shutdown", func(n *Node, pid PID) { n.Terminate(pid) }},
		{"kill", "killed", func(n *Node, pid PID) { n.Kill(pid) }},
		{"stop-normal", "(normal)", func(n *Node, pid PID) { n.Send(pid, Message{Topic: "stop"}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode()
			entered, release := make(chan struct{}), make(chan struct{})
			pid, _ := n.Spawn(behaviorFunc(func(c Context, m Message) {
				switch {
				case m.Payload == "block":
					close(entered)
					<-release
				case m.Topic == "stop":
					c.Stop(nil, nil)
				default:
					c.Reply(&m, m.Payload, nil)
				}
			}), SpawnOptions{})
			n.Send(pid, Message{Payload: "block"})
			<-entered
			var queued []<-chan error
			before := 0
			if tc.name == "stop-normal" {
				n.Send(pid, Message{Topic: "stop"})
				before = 1
			}
			for range 3 {
				queued = append(queued, asyncAsk(n, pid, "x"))
			}
			waitQueued(t, n, pid, before+3)
			if tc.name != "stop-normal" {
				tc.stop(n, pid)
			}
			close(release)
			for _, q := range queued {
				awaitExited(t, q, tc.reason)
			}
		})
	}
}

// The contract of an ask and a kill that race: an ask that was queued when
// the process died (its Send succeeded) fails with kind stopped, naming the
// kill; one that reaches the process after it was killed is not delivered,
// and fails at once with kind not_found (ErrNoProcess). A Behavior killed
// while it handles one ask, with another queued behind it, fails both.
func TestAskFailsWhenIdleBehaviorIsKilled(t *testing.T) {
	n := newTestNode()
	entered, gate := make(chan struct{}), make(chan struct{})
	pid, _ := n.Spawn(behaviorFunc(func(c Context, m Message) {
		if m.Payload == "a" {
			close(entered)
		}
		<-gate
	}), SpawnOptions{})
	first := asyncAsk(n, pid, "a")
	<-entered
	// "a" is out of the mailbox: what it holds now is "b", queued.
	second := asyncAsk(n, pid, "b")
	waitQueued(t, n, pid, 1)
	n.Kill(pid)
	close(gate)
	awaitExited(t, first, "killed")
	awaitExited(t, second, "killed")
	if _, _, err := n.Ask(pid, Message{Payload: "c"}, askLong); !errors.Is(err, ErrNoProcess) || value.KindOf(err) != value.KindNotFound {
		t.Fatalf("an ask after the kill failed with %v, want kind not_found (ErrNoProcess)", err)
	}
}

// goroutineID returns the ID of the calling goroutine.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return strings.Fields(string(buf))[1] // "goroutine 17 [running]: ..."
}

// goroutineAlive reports whether the goroutine with id exists.
func goroutineAlive(id string) bool {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Contains(string(buf[:n]), "goroutine "+id+" [")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// checkAskOutcome checks the contract for one ask: delivered (sendErr nil),
// it fails with kind stopped within a generous deadline; not delivered, it
// failed with kind not_found.
func checkAskOutcome(t *testing.T, c Call, sendErr error) {
	t.Helper()
	if sendErr != nil {
		c.Abandon(sendErr)
		if !errors.Is(sendErr, ErrNoProcess) || value.KindOf(sendErr) != value.KindNotFound {
			t.Errorf("an ask that was not delivered failed with %v, want kind not_found (ErrNoProcess)", sendErr)
		}
		return
	}
	r, err := c.Wait(10*time.Second, nil)
	switch {
	case err != nil:
		t.Errorf("an ask queued when its callee died was never settled: %v", err)
	case r.Err == nil && r.Value == "ok":
		// Answered before the kill.
	case !errors.Is(r.Err, ErrExited) || value.KindOf(r.Err) != value.KindStopped:
		t.Errorf("an ask queued when its callee died failed with %v, want kind stopped (ErrExited)", r.Err)
	}
}

// An ask delivered in the window in which Kill has marked its process dead
// but not yet closed the mailbox, after the process's consumer saw it dead
// and settled its mailbox, was queued and left to its deadline: the
// mailbox must be closed before anyone can see the process dead.
func TestAskQueuedAsItsProcessIsKilled(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spawn func(n *Node, entered chan<- string, gate <-chan struct{}) PID
	}{
		{"behavior", func(n *Node, entered chan<- string, gate <-chan struct{}) PID {
			pid, _ := n.Spawn(behaviorFunc(func(c Context, m Message) {
				entered <- goroutineID()
				<-gate
			}), SpawnOptions{})
			return pid
		}},
		{"goroutine", func(n *Node, entered chan<- string, gate <-chan struct{}) PID {
			pid, _ := n.SpawnFunc(func(p *Proc) (any, error) {
				m, err := p.Receive(context.Background())
				if err != nil {
					return nil, err
				}
				entered <- goroutineID()
				<-gate
				p.Unanswered(m)
				return nil, nil
			}, SpawnOptions{})
			return pid
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode()
			entered, gate := make(chan string, 1), make(chan struct{})
			pid := tc.spawn(n, entered, gate)
			first := asyncAsk(n, pid, "first")
			consumer := <-entered
			late := NewCall()
			var lateErr error
			hook := func(dying PID) {
				if dying != pid {
					return // another test's process
				}
				// The consumer goes on, sees the process dead, settles
				// what it holds and returns.
				close(gate)
				eventually(t, "the consumer returned", func() bool { return !goroutineAlive(consumer) })
				lateErr = n.Send(pid, late.MessageWithin(Message{Payload: "late"}, askLong))
			}
			afterMarkDead.Store(&hook)
			t.Cleanup(func() { afterMarkDead.Store(nil) })
			n.Kill(pid)
			awaitExited(t, first, "killed")
			checkAskOutcome(t, late, lateErr)
		})
	}
}

// Asks racing a kill, to a Behavior that is busy, one that is idle, and a
// goroutine process: each is either delivered and fails with kind stopped
// (or was answered first), or is not delivered and fails with not_found;
// none is left to its deadline.
func TestAsksRacingKill(t *testing.T) {
	const rounds, askers = 200, 8
	for _, tc := range []struct {
		name  string
		spawn func(n *Node, gate <-chan struct{}) PID
	}{
		{"busy-behavior", func(n *Node, gate <-chan struct{}) PID {
			pid, _ := n.Spawn(behaviorFunc(func(c Context, m Message) { <-gate }), SpawnOptions{})
			return pid
		}},
		{"idle-behavior", func(n *Node, _ <-chan struct{}) PID {
			pid, _ := n.Spawn(behaviorFunc(func(c Context, m Message) { c.Reply(&m, "ok", nil) }), SpawnOptions{})
			return pid
		}},
		{"goroutine", func(n *Node, gate <-chan struct{}) PID {
			pid, _ := n.SpawnFunc(func(p *Proc) (any, error) {
				for {
					m, err := p.Receive(context.Background())
					if err != nil {
						return nil, err
					}
					select {
					case <-gate:
						m.Reply(p.Self(), "ok", nil)
					case <-p.Context().Done():
						p.Unanswered(m)
						return nil, p.Context().Err()
					}
				}
			}, SpawnOptions{})
			return pid
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode()
			for range rounds {
				gate := make(chan struct{})
				pid := tc.spawn(n, gate)
				var wg sync.WaitGroup
				for range askers {
					wg.Go(func() {
						c := NewCall()
						checkAskOutcome(t, c, n.Send(pid, c.MessageWithin(Message{Payload: "q"}, askLong)))
					})
				}
				runtime.Gosched()
				n.Kill(pid)
				close(gate)
				wg.Wait()
				if t.Failed() {
					return
				}
			}
		})
	}
}

// A goroutine process's unanswered asks fail at its exit: those left in
// its mailbox and those it handed back with Unanswered, whatever ended it;
// an ask it answered keeps its answer.
func TestAskFailsWhenGoroutineProcessExits(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		end          func(n *Node, pid PID, quit chan<- error)
	}{
		{"returns", "(normal)", func(_ *Node, _ PID, quit chan<- error) { quit <- nil }},
		{"raises", "internal: it failed", func(_ *Node, _ PID, quit chan<- error) {
			quit <- value.NewError(value.KindInternal, "it failed")
		}},
		{"terminated", "shutdown", func(n *Node, pid PID, _ chan<- error) { n.Terminate(pid) }},
		{"killed", "killed", func(n *Node, pid PID, _ chan<- error) { n.Kill(pid) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode()
			quit := make(chan error, 1)
			took := make(chan struct{})
			pid, err := n.SpawnFunc(func(p *Proc) (any, error) {
				var kept []Message
				for len(kept) < 2 {
					m, err := p.Receive(context.Background())
					if err != nil {
						return nil, err
					}
					if m.Payload == "answer" {
						m.Reply(p.Self(), "answered", nil)
					}
					kept = append(kept, m)
				}
				close(took)
				var err error
				select {
				case err = <-quit:
				case <-p.Context().Done():
				}
				p.Unanswered(kept...)
				return nil, err
			}, SpawnOptions{})
			if err != nil {
				t.Fatal(err)
			}
			answered := make(chan any, 1)
			go func() {
				v, _, _ := n.Ask(pid, Message{Payload: "answer"}, askLong)
				answered <- v
			}()
			held := asyncAsk(n, pid, "held")
			<-took
			queued := asyncAsk(n, pid, "queued")
			waitQueued(t, n, pid, 1)
			tc.end(n, pid, quit)
			awaitExited(t, held, tc.reason)
			awaitExited(t, queued, tc.reason)
			if v := <-answered; v != "answered" {
				t.Fatalf("the answered ask got %v", v)
			}
		})
	}
}

// AskFunc callers hear of the exit at once too (a scatter's routee).
func TestAskFuncFailsWhenCalleeExits(t *testing.T) {
	n := newTestNode()
	gate := make(chan struct{})
	pid, _ := n.Spawn(behaviorFunc(func(c Context, m Message) { <-gate; panic("crash") }), SpawnOptions{})
	n.Send(pid, Message{})
	got := make(chan error, 1)
	n.AskFunc(pid, Message{}, askLong, func(_ any, from PID, err error) {
		if from != pid {
			err = errors.New("settled from " + from.String())
		}
		got <- err
	})
	waitQueued(t, n, pid, 1)
	close(gate)
	awaitExited(t, got, "panic: crash")
}

// A call to a process owner that exits names its exit.
func TestRunOnNamesTheOwnersExit(t *testing.T) {
	n := newTestNode()
	_, o := spawnOwner(t, n, nil)
	err := RunOn(context.Background(), o, CommandFunc(func() error { panic("owner broke") }), CallOptions{})
	if !errors.Is(err, ErrLoopStopped) || !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "panic: owner broke") {
		t.Fatalf("err = %v", err)
	}
}
