package pgdist

import "time"

// breakerState is a circuit breaker's state.
type breakerState uint8

const (
	closed breakerState = iota
	open
	halfOpen
)

func (s breakerState) String() string {
	switch s {
	case open:
		return "open"
	case halfOpen:
		return "half_open"
	}
	return "closed"
}

// breaker is the circuit breaker of one peer node: it counts consecutive
// send failures; circuit_breaker_failures of them open it, and sends are
// skipped until circuit_breaker_reset_time has passed, when it lets one
// probe through (half-open). The probe's success closes it, its failure
// opens it again for another reset time. Owned by the replica's loop.
type breaker struct {
	state    breakerState
	failures int
	openedAt time.Time
	probing  bool // half-open, and the probe is out
}

// allow reports whether a send may go now.
func (b *breaker) allow(now time.Time, reset time.Duration) bool {
	switch b.state {
	case closed:
		return true
	case open:
		if now.Sub(b.openedAt) < reset {
			return false
		}
		b.state = halfOpen
		fallthrough
	default: // half-open
		if b.probing {
			return false
		}
		b.probing = true
		return true
	}
}

// success records a send that went out.
func (b *breaker) success() {
	b.state, b.failures, b.probing = closed, 0, false
}

// failure records a send that failed; limit is circuit_breaker_failures.
// It reports whether the breaker opened.
func (b *breaker) failure(now time.Time, limit int) bool {
	b.failures++
	if b.state == halfOpen || b.failures >= limit {
		opened := b.state != open
		b.state, b.openedAt, b.probing = open, now, false
		return opened
	}
	return false
}

// shown is the state as /v1/cluster shows it: an open breaker whose reset
// time has passed is half-open, though no probe has gone yet.
func (b *breaker) shown(now time.Time, reset time.Duration) breakerState {
	if b.state == open && now.Sub(b.openedAt) >= reset {
		return halfOpen
	}
	return b.state
}
