package process

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
	"weak"
)

// A ref's timer stays set across the asks that reuse it (askRef): a short
// wait on a ref whose timer is set for a long one's deadline still times
// out after its own timeout, not the long one's; a long wait on a ref whose
// timer is set for a short one's deadline does not time out at that
// deadline; and every wait that times out waited its whole timeout.
func TestAskTimerAcrossReusedRefs(t *testing.T) {
	const short, long = 30 * time.Millisecond, 300 * time.Millisecond
	// ask waits for a reply that comes after answer (never if negative),
	// and reports how long the wait took, the ref, and its error.
	ask := func(timeout, answer time.Duration) (time.Duration, *askRef, error) {
		c := NewCall()
		r := c.r
		m := c.MessageWithin(Message{Payload: 1}, timeout)
		if answer >= 0 {
			go func() {
				time.Sleep(answer)
				m.Reply(PID{}, 1, nil)
			}()
		}
		start := time.Now()
		_, err := c.Wait(timeout, nil)
		return time.Since(start), r, err
	}
	reused := 0
	for i := 0; i < 8; i++ {
		// A long wait answered at once leaves the timer set for its
		// deadline; the short wait that reuses the ref must not wait
		// for that.
		_, r1, err := ask(long, 0)
		if err != nil {
			t.Fatal(err)
		}
		took, r2, err := ask(short, -1)
		if !errors.Is(err, ErrTimeout) || took < short || took > long*2/3 {
			t.Fatalf("short wait after a long one: %v after %s (timeout %s)", err, took, short)
		}
		// The short wait's expiry is over; a long wait answered after
		// the short timeout (on a ref whose timer was set for a short
		// one) gets its reply.
		_, _, err = ask(short, 0)
		if err != nil {
			t.Fatal(err)
		}
		took, r3, err := ask(long, 2*short)
		if err != nil {
			t.Fatalf("long wait answered after %s: %v after %s", 2*short, err, took)
		}
		if r1 == r2 && r2 == r3 {
			reused++
		}
	}
	if reused == 0 {
		t.Log("no ask reused the ref of the ask before it (the pool gave others)")
	}
}

// A wait longer than farArm stops its ref's timer as it ends, so a ref the
// pool lets go is not held by a timer set for a far deadline; one within it
// leaves its timer set.
func TestAskFarTimerStopped(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		armed   bool
	}{{10 * time.Second, true}, {2 * farArm, false}, {1<<63 - 1, false}} {
		// A ref of its own, whose timer nothing else has set.
		r := askPool.New().(*askRef)
		r.state.Store(2)
		c := Call{r: r, token: 2}
		m := c.MessageWithin(Message{}, tc.timeout)
		go m.Reply(PID{}, 1, nil)
		if _, err := c.Wait(tc.timeout, nil); err != nil {
			t.Fatal(err)
		}
		r.timer.mu.Lock()
		armed, far, ahead := r.timer.armed, r.timer.far, time.Duration(r.timer.when-int64(time.Since(epoch)))
		r.timer.mu.Unlock()
		if far {
			t.Fatalf("timeout %s: far still set after release", tc.timeout)
		}
		// The ref is back in the pool: another test may have taken it
		// and set or stopped its timer, and a timer whose deadline has
		// passed (a slow host) fired rather than was stopped. So only a
		// timer stopped before a deadline within farArm, or one still
		// set beyond farArm, is conclusive.
		switch {
		case tc.armed && !armed && ahead > 0 && ahead <= farArm:
			t.Fatalf("timeout %s: the released ref's timer was stopped %s before its deadline", tc.timeout, ahead)
		case !tc.armed && armed && ahead > farArm:
			t.Fatalf("timeout %s: the released ref's timer is still set, %s ahead", tc.timeout, ahead)
		}
	}
}

// Wait gives up at once when done closes, with its timer set or not, and
// the ref serves the next ask.
func TestAskAbandonedByDone(t *testing.T) {
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		c := NewCall()
		m := c.MessageWithin(Message{}, time.Minute)
		time.AfterFunc(time.Millisecond, cancel)
		start := time.Now()
		_, err := c.Wait(time.Minute, ctx.Done())
		if !errors.Is(err, ErrCallAbandoned) || time.Since(start) > time.Second {
			t.Fatalf("%v after %s", err, time.Since(start))
		}
		if ok, _ := m.Reply(PID{}, 1, nil); ok {
			t.Fatal("a reply settled an abandoned call")
		}
		c = NewCall()
		m = c.MessageWithin(Message{}, time.Minute)
		m.Reply(PID{}, 2, nil)
		if r, err := c.Wait(time.Minute, nil); err != nil || r.Value != 2 {
			t.Fatalf("the next ask: %v, %v", r.Value, err)
		}
	}
}

// RunOn's waiter likewise: a call whose timeout is beyond farArm stops the
// waiter's timer as it ends; one within it leaves it set for the next call.
func TestCallFarTimerStopped(t *testing.T) {
	l := NewLoop(LoopOptions{})
	runLoop(t, l)
	marker := errors.New("not yet used")
	for _, tc := range []struct {
		timeout time.Duration
		armed   bool
	}{{10 * time.Second, true}, {2 * farArm, false}, {1<<63 - 1, false}} {
		used := false
		for i := 0; i < 20 && !used; i++ {
			// A waiter of its own, whose timer nothing else has
			// set; the call takes it from the pool unless the pool
			// dropped it (the race detector's pools drop some).
			w := waiters.New().(*waiter)
			w.err = marker
			waiters.Get() // the one the last call put back, else Put keeps it first
			waiters.Put(w)
			if err := RunOn(context.Background(), l, &counter{}, CallOptions{Timeout: tc.timeout}); err != nil {
				t.Fatal(err)
			}
			w.timer.mu.Lock()
			used = w.err == nil // release clears it
			armed, far, ahead := w.timer.armed, w.timer.far, time.Duration(w.timer.when-int64(time.Since(epoch)))
			w.timer.mu.Unlock()
			// A timer whose deadline has passed (a slow host) fired
			// rather than was stopped.
			fired := !armed && ahead <= 0
			if used && (armed != tc.armed && !fired || far) {
				t.Fatalf("timeout %s: after the call the timer is set %v (far %v, %s ahead), want %v", tc.timeout, armed, far, ahead, tc.armed)
			}
		}
		if !used {
			t.Fatalf("timeout %s: the call never took the waiter put in the pool", tc.timeout)
		}
	}
}

// Many askers at once, on refs whose timers keep crossing their replies:
// each gets its own reply or times out, never before its own timeout, and
// nobody waits past a timeout by much.
func TestAskTimersUnderLoad(t *testing.T) {
	n := newTestNode()
	replier := behaviorFunc(func(c Context, m Message) {
		d := m.Payload.(time.Duration)
		time.AfterFunc(d, func() { c.Node().Reply(&m, c.Self(), d, nil) })
	})
	pid, _ := n.Spawn(replier, SpawnOptions{})
	defer n.Kill(pid)
	timeouts := []time.Duration{time.Millisecond, 2 * time.Millisecond, 40 * time.Millisecond}
	errs := make(chan error, 16)
	asker := func(g int) error {
		end := time.Now().Add(500 * time.Millisecond)
		for i := g; time.Now().Before(end); i++ {
			timeout := timeouts[i%len(timeouts)]
			answer := time.Duration(i%7) * 500 * time.Microsecond
			c := NewCall()
			if err := n.Send(pid, c.MessageWithin(Message{Payload: answer}, timeout)); err != nil {
				return err
			}
			start := time.Now()
			r, err := c.Wait(timeout, nil)
			took := time.Since(start)
			switch {
			case errors.Is(err, ErrTimeout) && took < timeout:
				return fmt.Errorf("timed out after %s, before its %s timeout", took, timeout)
			case err == nil && r.Value != answer:
				return fmt.Errorf("got %v, the reply to another ask (want %v)", r.Value, answer)
			case err != nil && !errors.Is(err, ErrTimeout):
				return err
			case took > timeout+time.Second:
				return fmt.Errorf("waited %s for a %s timeout", took, timeout)
			}
		}
		return nil
	}
	for g := 0; g < 16; g++ {
		go func() { errs <- asker(g) }()
	}
	for g := 0; g < 16; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A ref (or a RunOn waiter) the pool lets go while its timer is set is
// collected: the timer holds it weakly, and is stopped once it is gone.
// A timer that held it kept every such ref alive until it fired, up to a
// route's timeout later.
func TestKeptTimerHoldsNoRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func() (weak.Pointer[keptTimer], *time.Timer)
	}{
		{"askRef", func() (weak.Pointer[keptTimer], *time.Timer) {
			r := askPool.New().(*askRef)
			r.state.Store(2)
			c := Call{r: r, token: 2}
			m := c.MessageWithin(Message{}, time.Hour)
			go m.Reply(PID{}, 1, nil)
			if _, err := c.Wait(time.Hour, nil); err != nil {
				t.Fatal(err)
			}
			// Released to the pool with its timer set; taken out of it
			// again here so that only the timer could hold it.
			return weak.Make(&r.timer), r.timer.t
		}},
		{"waiter", func() (weak.Pointer[keptTimer], *time.Timer) {
			w := waiters.New().(*waiter)
			w.timer.mu.Lock()
			now := int64(time.Since(epoch))
			w.timer.setBy(now+int64(time.Hour), now)
			w.timer.mu.Unlock()
			return weak.Make(&w.timer), w.timer.t
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wp, tm := tc.make()
			deadline := time.Now().Add(10 * time.Second)
			for wp.Value() != nil {
				if time.Now().After(deadline) {
					t.Fatal("the record is still alive: its set timer holds it")
				}
				runtime.GC()
			}
			// The cleanup stops the timer once the record is gone: Reset
			// reports whether the timer was set (and leaves it set, for
			// the cleanup to stop, until it is found stopped).
			for tm.Reset(time.Hour) {
				if time.Now().After(deadline) {
					t.Fatal("the collected record's timer is still set")
				}
				runtime.GC()
				time.Sleep(time.Millisecond)
			}
			tm.Stop()
		})
	}
}
