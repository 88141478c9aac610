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
		busy := timeout*3/4 + time.Duration(i%50)*timeout/100
		if err := h.s.loop.Submit(func() {
			for end := time.Now().Add(busy); time.Now().Before(end); {
			}
		}); err != nil {
			t.Fatal(err)
		}
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
		busy := timeout*3/4 + time.Duration(i%50)*timeout/100
		if err := h.s.loop.Submit(func() {
			for end := time.Now().Add(busy); time.Now().Before(end); {
			}
		}); err != nil {
			t.Fatal(err)
		}
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
	if err := h.s.do("count", func() error { left = len(h.s.st.groupSubs["g"]); return nil }); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d subscriptions left registered after %d abandoned monitor calls", left, gaveUp)
	}
}
