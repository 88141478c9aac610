package pgscope

import (
	"errors"
	"testing"
	"time"
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
