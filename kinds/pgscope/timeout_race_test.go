package pgscope

import (
	"errors"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// A call answered just as its protocol_timeout fires must not leave that
// timer's late expiry to strike the next call that reuses the pooled call
// object: that call would report a timeout at once, although the loop
// answers it (a join reported failed yet applied). Loop commands here take
// about as long as the timeout, so answers and expiries keep crossing.
func TestTimeoutNeverStrikesTheNextCall(t *testing.T) {
	const timeout = time.Millisecond
	h := newHarness(t, func(s *Spec) { s.ProtocolTimeout = timeout })
	deadline := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		// Busy for about the timeout, within ±25%.
		h.busy(timeout*3/4 + time.Duration(i%50)*timeout/100)
		start := time.Now()
		err := h.s.do("probe", func() error { return nil })
		if took := time.Since(start); errors.Is(err, ErrTimeout) && took < timeout/2 {
			t.Fatalf("call %d timed out after %s, before its %s protocol_timeout", i, took, timeout)
		}
	}
}

// A monitor whose caller gave up waiting (its protocol_timeout passed) is
// never left registered, even when the loop gets to it just after the
// caller gave up: nobody could ever close it.
func TestAbandonedMonitorNotLeftRegistered(t *testing.T) {
	const timeout = time.Millisecond
	h := newHarness(t, func(s *Spec) { s.ProtocolTimeout = timeout })
	gaveUp := 0
	deadline := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		h.busy(timeout*3/4 + time.Duration(i%50)*timeout/100)
		sub, _, err := h.s.Monitor(process.PID{}, "g")
		if err != nil {
			gaveUp++
			continue
		}
		sub.Close(false)
	}
	if gaveUp == 0 {
		t.Skip("no monitor call timed out")
	}
	h.s.spec.Store(func() *Spec { sp := h.s.Spec(); sp.ProtocolTimeout = 10 * time.Second; return &sp }())
	var left int
	if err := h.s.do("count", func() error {
		if f := h.s.st.groupSubs["g"]; f != nil {
			left = f.live
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d subscriptions left registered after %d abandoned monitor calls", left, gaveUp)
	}
}

// busy queues a loop command that spins for d, unless a few are already
// waiting: a loop short of CPU (a loaded machine, -race) falls behind the
// submitter, whose calls time out and submit again, and would fill the
// queue to action_queue_max_size.
func (h *harness) busy(d time.Duration) {
	h.t.Helper()
	if h.s.loop.Len() >= 4 {
		return
	}
	if err := h.s.loop.Submit(func() {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	}); err != nil {
		h.t.Fatal(err)
	}
}
