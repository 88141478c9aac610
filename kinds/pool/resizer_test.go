package pool

import (
	"math/rand/v2"
	"testing"
	"time"
)

func loads(n int, l load) []load {
	out := make([]load, n)
	for i := range out {
		out[i] = l
	}
	return out
}

var idle = load{}
var swamped = load{queued: 3, busy: true}

// The reference cases of Akka's ResizerSpec.
func TestDefaultResizerAkkaReference(t *testing.T) {
	s := DefaultResizerSpec()
	s.LowerBound, s.UpperBound = 2, 3
	r := &defaultResizer{s: s}
	if got := r.capacity(nil); got != 2 {
		t.Errorf("bounds 2..3, empty pool: capacity %d, want +2", got)
	}
	if got := r.capacity(loads(2, idle)); got != 0 {
		t.Errorf("bounds 2..3, two idle routees: capacity %d, want 0", got)
	}

	s = DefaultResizerSpec()
	s.LowerBound, s.UpperBound, s.RampupRate = 2, 10, 0.2
	r = &defaultResizer{s: s}
	for _, c := range []struct{ pressure, capacity, want int }{{9, 10, 0}, {5, 5, 1}, {6, 6, 2}} {
		if got := r.rampup(c.pressure, c.capacity); got != c.want {
			t.Errorf("rampup(pressure %d, capacity %d) = %d, want %d", c.pressure, c.capacity, got, c.want)
		}
	}

	s = DefaultResizerSpec()
	s.LowerBound, s.UpperBound, s.BackoffThreshold, s.BackoffRate = 2, 10, 0.3, 0.1
	r = &defaultResizer{s: s}
	for _, c := range []struct{ pressure, capacity, want int }{
		{10, 10, 0}, {4, 10, 0}, {3, 10, 0}, {2, 10, -1}, {0, 10, -1}, {1, 9, -1}, {0, 9, -1},
	} {
		if got := r.backoff(c.pressure, c.capacity); got != c.want {
			t.Errorf("backoff(pressure %d, capacity %d) = %d, want %d", c.pressure, c.capacity, got, c.want)
		}
	}
}

func TestDefaultResizerPressureAndTiming(t *testing.T) {
	s := DefaultResizerSpec()
	r := &defaultResizer{s: s}
	// threshold 1: a routee with mail waiting is under pressure.
	if got := r.pressure([]load{{queued: 1, busy: true}, {busy: true}, idle}); got != 1 {
		t.Errorf("threshold 1: pressure %d, want 1", got)
	}
	r.s.PressureThreshold = 0 // busy at all
	if got := r.pressure([]load{{queued: 1, busy: true}, {busy: true}, idle}); got != 2 {
		t.Errorf("threshold 0: pressure %d, want 2", got)
	}
	r.s.PressureThreshold = 3
	if got := r.pressure([]load{{queued: 3, busy: true}, {queued: 2, busy: true}, idle}); got != 1 {
		t.Errorf("threshold 3: pressure %d, want 1", got)
	}
	r.s.PressureThreshold = 1
	// Every routee under pressure: grow by ceil(0.2 * 5) = 1, within bounds.
	if got := r.capacity(loads(5, swamped)); got != 1 {
		t.Errorf("5 swamped routees: %+d, want +1", got)
	}
	if got := r.capacity(loads(10, swamped)); got != 0 {
		t.Errorf("at the upper bound: %+d, want 0", got)
	}
	if got := r.capacity(loads(10, idle)); got != -1 {
		t.Errorf("10 idle routees: %+d, want -1", got)
	}
	if got := r.capacity(loads(1, idle)); got != 0 {
		t.Errorf("idle at the lower bound: %+d, want 0", got)
	}
	// Akka: the counter is 0 for the initial resize, then every
	// messages_per_resize messages.
	for c, want := range map[uint64]bool{0: true, 1: false, 9: false, 10: true, 20: true, 25: false} {
		if got := r.isTimeForResize(c); got != want {
			t.Errorf("isTimeForResize(%d) = %v", c, got)
		}
	}
}

func newOpt(mod func(*ResizerSpec)) *optimalResizer {
	s := OptimalResizerSpec()
	// Akka's OptimalSizeExploringResizerSpec runs with its case class's
	// upper bound, 30 (reference.conf, our default, says 10).
	s.UpperBound = 30
	if mod != nil {
		mod(&s)
	}
	return newOptimalResizer(s, rand.New(rand.NewPCG(1, 2)))
}

// The reference cases of Akka's MetricsBasedResizerSpec.
func TestOptimalResizerAkkaReference(t *testing.T) {
	now := time.Now()
	t.Run("downsize after a long underutilization streak", func(t *testing.T) {
		r := newOpt(func(s *ResizerSpec) { s.DownsizeAfterUnderutilizedFor = 72 * time.Hour; s.DownsizeRatio = 0.5 })
		r.setRecord(record{streak: &streak{start: now.Add(-73 * time.Hour), highest: 8}})
		if got := r.resize(loads(20, idle), now); got != 4-20 {
			t.Errorf("got %+d, want -16", got)
		}
	})
	t.Run("no downsize on empty history", func(t *testing.T) {
		if got := newOpt(nil).resize(loads(10, idle), now); got != 0 {
			t.Errorf("got %+d", got)
		}
	})
	t.Run("always go to the lower bound if below it", func(t *testing.T) {
		r := newOpt(func(s *ResizerSpec) { s.LowerBound, s.UpperBound = 50, 100 })
		if got := r.resize(loads(20, idle), now); got != 30 {
			t.Errorf("got %+d, want +30", got)
		}
	})
	t.Run("always go to the upper bound if above it", func(t *testing.T) {
		r := newOpt(func(s *ResizerSpec) { s.UpperBound = 50 })
		if got := r.resize(loads(80, idle), now); got != -30 {
			t.Errorf("got %+d, want -30", got)
		}
	})
	t.Run("explore within explore_step_size", func(t *testing.T) {
		r := newOpt(func(s *ResizerSpec) { s.ExploreStepSize = 0.3; s.ChanceOfExploration = 1 })
		r.perfLog = map[int]time.Duration{11: time.Millisecond, 13: time.Millisecond, 12: 3 * time.Millisecond}
		downs := 0
		for i := 0; i < 100; i++ {
			c := r.resize(loads(10, swamped), now)
			if c == 0 || abs(c) > 3 {
				t.Fatalf("explored by %+d from 10 with step 0.3", c)
			}
			if c < 0 {
				downs++
			}
		}
		if downs == 0 || downs > 50 {
			t.Errorf("ramped down %d of 100 times with chance 0.2", downs)
		}
	})
	t.Run("optimize toward the fastest size", func(t *testing.T) {
		r := newOpt(func(s *ResizerSpec) { s.ChanceOfExploration = 0 })
		r.perfLog = map[int]time.Duration{7: 5 * time.Millisecond, 10: 3 * time.Millisecond, 11: 2 * time.Millisecond, 12: 4 * time.Millisecond}
		for _, c := range []struct{ from, want int }{{10, 1}, {12, -1}, {7, 2}} {
			if got := r.resize(loads(c.from, swamped), now); got != c.want {
				t.Errorf("from %d: %+d, want %+d", c.from, got, c.want)
			}
		}
	})
	t.Run("ignore sizes beyond optimization_range", func(t *testing.T) {
		r := newOpt(func(s *ResizerSpec) { s.ChanceOfExploration = 0; s.OptimizationRange = 4 })
		r.perfLog = map[int]time.Duration{7: 5 * time.Millisecond, 8: 2 * time.Millisecond, 10: 3 * time.Millisecond,
			11: 4 * time.Millisecond, 12: 3 * time.Millisecond, 13: 1 * time.Millisecond}
		if got := r.resize(loads(10, swamped), now); got != -1 {
			t.Errorf("got %+d, want -1", got)
		}
	})
}

func TestOptimalResizerReport(t *testing.T) {
	t0 := time.Now()
	t.Run("time for resize", func(t *testing.T) {
		r := newOpt(func(s *ResizerSpec) { s.ActionInterval = 10 * time.Second })
		if !r.isTimeForResize(0) {
			t.Error("empty history must be time for resize")
		}
		r.setRecord(record{checkTime: time.Now().Add(-8 * time.Second)})
		if r.isTimeForResize(100) {
			t.Error("8s after the last check of a 10s interval")
		}
		r.setRecord(record{checkTime: time.Now().Add(-11 * time.Second)})
		if !r.isTimeForResize(100) {
			t.Error("11s after the last check of a 10s interval")
		}
	})
	t.Run("records message count and queue length", func(t *testing.T) {
		r := newOpt(nil)
		r.report([]load{idle}, 3, t0)
		if r.rec.messageCount != 3 {
			t.Errorf("messageCount %d", r.rec.messageCount)
		}
		r.report([]load{{queued: 1, busy: true}, {busy: true}}, 5, t0)
		if r.rec.totalQueue != 3 {
			t.Errorf("total queue %d, want 3 (queued plus the message each handles)", r.rec.totalQueue)
		}
	})
	t.Run("underutilization streak", func(t *testing.T) {
		r := newOpt(nil)
		r.report(loads(2, idle), 0, t0)
		if r.rec.streak == nil || !r.rec.streak.start.Equal(t0) {
			t.Fatalf("streak %+v", r.rec.streak)
		}
		start := t0.Add(-time.Hour)
		r.setRecord(record{streak: &streak{start: start, highest: 1}})
		r.report(loads(2, swamped), 2, t0)
		if r.rec.streak != nil {
			t.Error("a fully utilized pool ends the streak")
		}
		r.setRecord(record{streak: &streak{start: start, highest: 1}})
		r.report([]load{swamped, swamped, idle}, 2, t0)
		if !r.rec.streak.start.Equal(start) || r.rec.streak.highest != 2 {
			t.Errorf("streak %+v: start kept, highest raised to 2", r.rec.streak)
		}
		r.report([]load{swamped, idle, idle}, 2, t0)
		if r.rec.streak.highest != 2 {
			t.Errorf("highest lowered to %d", r.rec.streak.highest)
		}
	})
	t.Run("performance log", func(t *testing.T) {
		r := newOpt(nil)
		r.report(loads(2, idle), 0, t0)
		r.report(loads(2, swamped), 4, t0.Add(time.Millisecond))
		if len(r.perfLog) != 0 {
			t.Error("no log entry right after an underutilized check")
		}
		r = newOpt(nil)
		r.setRecord(record{totalQueue: 2, messageCount: 2, checkTime: t0})
		r.report([]load{{busy: true}, {busy: true}}, 2, t0.Add(time.Millisecond))
		if len(r.perfLog) != 0 {
			t.Error("no log entry when nothing was processed")
		}
		// 4 in the routees, 2 more arrive, 2 left: 4 processed in 20ms.
		r = newOpt(nil)
		r.setRecord(record{totalQueue: 4, messageCount: 10, checkTime: t0})
		r.report([]load{{busy: true}, {busy: true}}, 12, t0.Add(20*time.Millisecond))
		if got := r.perfLog[2]; got != 5*time.Millisecond {
			t.Errorf("log[2] = %s, want 5ms per message", got)
		}
		// weight_of_latest_metric 0.5: the old 5ms and the new 15ms average.
		r.setRecord(record{totalQueue: 2, messageCount: 12, checkTime: t0})
		r.report([]load{{busy: true}, {busy: true}}, 15, t0.Add(45*time.Millisecond))
		if got := r.perfLog[2]; got != 10*time.Millisecond {
			t.Errorf("log[2] = %s, want 10ms", got)
		}
	})
}

// Both resizers default to Akka's reference.conf (akka.actor.deployment.
// default.resizer and .optimal-size-exploring-resizer), which the docs
// promise; the optimal resizer's Scala case class says upper bound 30.
func TestResizerDefaultsAreReferenceConf(t *testing.T) {
	d, o := DefaultResizerSpec(), OptimalResizerSpec()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"resizer.lower-bound", d.LowerBound, 1},
		{"resizer.upper-bound", d.UpperBound, 10},
		{"resizer.pressure-threshold", d.PressureThreshold, 1},
		{"resizer.rampup-rate", d.RampupRate, 0.2},
		{"resizer.backoff-threshold", d.BackoffThreshold, 0.3},
		{"resizer.backoff-rate", d.BackoffRate, 0.1},
		{"resizer.messages-per-resize", d.MessagesPerResize, 10},
		{"optimal.lower-bound", o.LowerBound, 1},
		{"optimal.upper-bound", o.UpperBound, 10},
		{"optimal.chance-of-ramping-down-when-full", o.ChanceOfRampingDownWhenFull, 0.2},
		{"optimal.action-interval", o.ActionInterval, 5 * time.Second},
		{"optimal.downsize-after-underutilized-for", o.DownsizeAfterUnderutilizedFor, 72 * time.Hour},
		{"optimal.explore-step-size", o.ExploreStepSize, 0.1},
		{"optimal.chance-of-exploration", o.ChanceOfExploration, 0.4},
		{"optimal.downsize-ratio", o.DownsizeRatio, 0.8},
		{"optimal.optimization-range", o.OptimizationRange, 16},
		{"optimal.weight-of-latest-metric", o.WeightOfLatestMetric, 0.5},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}
