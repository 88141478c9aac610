package backoff

import (
	"math"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestDelayGrowsToTheCap(t *testing.T) {
	cases := []struct {
		name string
		p    Policy
		want []time.Duration
	}{
		{"doubles by default", Policy{Initial: 10 * ms, Max: 100 * ms}, []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 100 * ms, 100 * ms}},
		{"factor", Policy{Initial: ms, Max: time.Second, Factor: 3}, []time.Duration{ms, 3 * ms, 9 * ms, 27 * ms, 81 * ms, 243 * ms, 729 * ms, time.Second}},
		{"factor one is constant", Policy{Initial: 5 * ms, Max: time.Second, Factor: 1}, []time.Duration{5 * ms, 5 * ms, 5 * ms}},
		{"cap below the first delay", Policy{Initial: time.Second, Max: 10 * ms}, []time.Duration{10 * ms, 10 * ms}},
		{"no cap", Policy{Initial: ms}, []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms}},
		{"zero", Policy{}, []time.Duration{0, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i, w := range tc.want {
				if got := tc.p.Delay(i); got != w {
					t.Errorf("Delay(%d) = %v, want %v", i, got, w)
				}
			}
		})
	}
}

// A huge attempt neither overflows nor wraps negative.
func TestDelayDoesNotOverflow(t *testing.T) {
	for _, p := range []Policy{{Initial: time.Second, Max: time.Hour}, {Initial: time.Second}} {
		for _, n := range []int{62, 63, 64, 1000, math.MaxInt32, math.MaxInt} {
			d := p.Delay(n)
			if d <= 0 || (p.Max > 0 && d != p.Max) {
				t.Errorf("%+v: Delay(%d) = %v", p, n, d)
			}
		}
	}
	if d := (Policy{Initial: time.Second}).Delay(-3); d != time.Second {
		t.Errorf("Delay(-3) = %v", d)
	}
}

// Jitter keeps each delay within [1-J, 1+J) of the unspread one, reflects
// what passes the cap below it, and uses the injected source.
func TestJitterBounds(t *testing.T) {
	p := Policy{Initial: 100 * ms, Max: time.Second, Jitter: 0.2}
	for _, tc := range []struct {
		r       float64
		attempt int
		want    time.Duration
	}{
		{0, 0, 80 * ms},         // the lowest
		{0.5, 0, 100 * ms},      // the middle
		{0.75, 1, 220 * ms},     // 200ms * 1.1
		{0, 5, 800 * ms},        // capped at 1s, then spread down
		{0.75, 5, 900 * ms},     // 1.1s reflected below the cap
		{0.999999, 5, 800 * ms}, // the highest reflects to the lowest
	} {
		r := tc.r
		p.Rand = func() float64 { return r }
		got := p.Delay(tc.attempt)
		if d := got - tc.want; d < -ms/1000 || d > ms/1000 {
			t.Errorf("r=%v attempt %d: %v, want %v", tc.r, tc.attempt, got, tc.want)
		}
	}
	// Whatever the source gives in [0, 1), delays stay in bounds.
	p.Rand = nil
	for n := 0; n < 8; n++ {
		base := float64(min(100*ms<<n, time.Second))
		for range 200 {
			d := float64(p.Delay(n))
			if d < 0.8*base-1 || d > math.Min(1.2*base, float64(time.Second)) {
				t.Fatalf("attempt %d: %v out of bounds around %v", n, time.Duration(d), time.Duration(base))
			}
		}
	}
	// Jitter past 1 is taken as 1: never a negative delay.
	p = Policy{Initial: 100 * ms, Jitter: 5, Rand: func() float64 { return 0 }}
	if d := p.Delay(0); d != 0 {
		t.Errorf("jitter 5, r 0: %v", d)
	}
}

func TestBackoffNextAdvanceReset(t *testing.T) {
	b := New(Policy{Initial: 10 * ms, Max: 40 * ms})
	var got []time.Duration
	for range 4 {
		got = append(got, b.Next())
	}
	want := []time.Duration{10 * ms, 20 * ms, 40 * ms, 40 * ms}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Next: %v, want %v", got, want)
		}
	}
	if b.Attempt() != 4 {
		t.Fatalf("attempt %d", b.Attempt())
	}
	b.Reset()
	if d := b.Delay(); d != 10*ms || b.Attempt() != 0 {
		t.Fatalf("after Reset: %v, attempt %d", d, b.Attempt())
	}
	b.Advance()
	if d := b.Delay(); d != 20*ms {
		t.Fatalf("after Advance: %v", d)
	}
	if d := b.Delay(); d != 20*ms {
		t.Fatalf("Delay moved on: %v", d)
	}
}
