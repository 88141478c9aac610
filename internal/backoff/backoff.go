// Package backoff computes the growing delays between the retries of
// something that keeps failing: a restart, a dial, a reload, an accept.
// It is the one exponential backoff of the runtime.
//
// A Policy is the rule (a first delay, a factor, a cap, a spread); Delay
// gives the delay before a given retry. A Backoff counts the retries of
// one thing over a Policy: Next returns the delay and moves on, Reset
// starts again once the thing has recovered. Neither sleeps: callers arm
// their own timers, so tests drive them without waiting.
package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// Policy is how delays grow. The zero value gives zero delays.
type Policy struct {
	// Initial is the delay before the first retry (attempt 0).
	Initial time.Duration
	// Max caps every delay. Zero or less: no cap.
	Max time.Duration
	// Factor multiplies the delay per attempt; 0 means 2.
	Factor float64
	// Jitter spreads each delay by a random factor in [1-Jitter, 1+Jitter)
	// (0.2: ±20%), so things that failed together do not retry together.
	// A spread delay past Max is reflected below it rather than clamped:
	// clamping would retry them all at exactly Max again. 0: no spread;
	// values are taken within [0, 1].
	Jitter float64
	// Rand returns a number in [0, 1) for the spread; nil is
	// math/rand/v2's Float64. Tests inject their own.
	Rand func() float64
}

// Delay returns the delay before retry attempt (0 first): Initial times
// Factor^attempt, at most Max, spread by Jitter.
func (p Policy) Delay(attempt int) time.Duration {
	f := p.Factor
	if f == 0 {
		f = 2
	}
	d := float64(p.Initial) * math.Pow(f, float64(max(attempt, 0)))
	maxD := math.Inf(1)
	if p.Max > 0 {
		maxD = float64(p.Max)
	}
	d = math.Min(d, maxD)
	if j := math.Min(math.Max(p.Jitter, 0), 1); j > 0 {
		r := p.Rand
		if r == nil {
			r = rand.Float64
		}
		d *= 1 - j + 2*j*r()
		if d > maxD {
			d = 2*maxD - d
		}
	}
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// Backoff counts the retries of one thing over a Policy. The zero value
// of its counter is the first attempt. It is not safe for concurrent use:
// it belongs to the goroutine that retries.
type Backoff struct {
	Policy
	attempt int
}

// New returns a Backoff over p.
func New(p Policy) Backoff { return Backoff{Policy: p} }

// Delay returns the delay of the current attempt, without moving on.
func (b *Backoff) Delay() time.Duration { return b.Policy.Delay(b.attempt) }

// Next returns the delay of the current attempt and moves to the next.
func (b *Backoff) Next() time.Duration {
	d := b.Delay()
	b.Advance()
	return d
}

// Advance moves to the next attempt without taking a delay.
func (b *Backoff) Advance() {
	if b.attempt < math.MaxInt32 {
		b.attempt++
	}
}

// Reset starts again from the first attempt, once the thing recovered.
func (b *Backoff) Reset() { b.attempt = 0 }

// Attempt returns how many attempts were taken since the last Reset.
func (b *Backoff) Attempt() int { return b.attempt }
