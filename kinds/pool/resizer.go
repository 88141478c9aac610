package pool

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"time"
)

// load is what a resizer sees of one routee: the messages waiting in its
// mailbox, and whether it is busy (handling a message or holding mail).
type load struct {
	queued int
	busy   bool
}

// resizer is the common shape of both resizers. isTimeForResize is called
// by senders, concurrently; the rest only on the pool's loop.
type resizer interface {
	// isTimeForResize is asked with the message counter before each message
	// is routed (0 for the initial resize, before the first message).
	isTimeForResize(counter uint64) bool
	// report lets the resizer collect metrics just before resize.
	report(routees []load, counter uint64, now time.Time)
	// resize returns how many routees to add (> 0) or remove (< 0).
	resize(routees []load, now time.Time) int
	spec() ResizerSpec
}

func newResizer(s ResizerSpec, rng *rand.Rand) resizer {
	if s.Type == OptimalResizerType {
		return newOptimalResizer(s, rng)
	}
	return &defaultResizer{s: s}
}

// defaultResizer is Akka's DefaultResizer: every messages_per_resize
// messages it counts the routees under pressure and ramps up when all of
// them are, backs off when few are.
type defaultResizer struct{ s ResizerSpec }

func (r *defaultResizer) spec() ResizerSpec { return r.s }

func (r *defaultResizer) isTimeForResize(counter uint64) bool {
	return counter%uint64(r.s.MessagesPerResize) == 0
}

func (r *defaultResizer) report([]load, uint64, time.Time) {}

func (r *defaultResizer) resize(routees []load, _ time.Time) int { return r.capacity(routees) }

// capacity is the change that brings the pool to the size its pressure
// asks for, kept within the bounds.
func (r *defaultResizer) capacity(routees []load) int {
	current := len(routees)
	delta := r.filter(r.pressure(routees), current)
	proposed := current + delta
	switch {
	case proposed < r.s.LowerBound:
		return delta + (r.s.LowerBound - proposed)
	case proposed > r.s.UpperBound:
		return delta - (proposed - r.s.UpperBound)
	}
	return delta
}

// pressure counts the routees under pressure. Threshold 0: busy at all
// (handling a message); 1: has messages waiting besides the one it
// handles; n > 1: at least n messages waiting.
func (r *defaultResizer) pressure(routees []load) int {
	n := 0
	for _, l := range routees {
		switch t := r.s.PressureThreshold; {
		case t < 1:
			if l.busy {
				n++
			}
		case l.queued >= t:
			n++
		}
	}
	return n
}

func (r *defaultResizer) filter(pressure, capacity int) int {
	return r.rampup(pressure, capacity) + r.backoff(pressure, capacity)
}

// rampup grows by rampup_rate of the capacity (rounded up) when every
// routee is under pressure.
func (r *defaultResizer) rampup(pressure, capacity int) int {
	if pressure < capacity {
		return 0
	}
	return int(math.Ceil(r.s.RampupRate * float64(capacity)))
}

// backoff shrinks by backoff_rate of the capacity (rounded down, so at
// least one) when fewer than backoff_threshold of the routees are under
// pressure.
func (r *defaultResizer) backoff(pressure, capacity int) int {
	if r.s.BackoffThreshold > 0 && r.s.BackoffRate > 0 && capacity > 0 &&
		float64(pressure)/float64(capacity) < r.s.BackoffThreshold {
		return int(math.Floor(-r.s.BackoffRate * float64(capacity)))
	}
	return 0
}

// streak is a period during which not every routee was busy at once.
type streak struct {
	start   time.Time
	highest int // the most routees seen busy at once during the streak
}

// record is what the optimal resizer remembers of its last check.
type record struct {
	streak       *streak
	messageCount uint64
	totalQueue   int
	checkTime    time.Time // zero before the first check
}

// optimalResizer is Akka's DefaultOptimalSizeExploringResizer: it logs the
// time per processed message at each pool size it saw fully utilized and
// walks toward the fastest size, exploring nearby sizes now and then, and
// downsizes after a long period of underutilization.
type optimalResizer struct {
	s   ResizerSpec
	rng *rand.Rand

	// checkNanos mirrors record.checkTime for isTimeForResize, which
	// senders call concurrently.
	checkNanos atomic.Int64

	perfLog       map[int]time.Duration // pool size -> time per message
	rec           record
	stopExploring bool
}

func newOptimalResizer(s ResizerSpec, rng *rand.Rand) *optimalResizer {
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &optimalResizer{s: s, rng: rng, perfLog: map[int]time.Duration{}}
}

func (r *optimalResizer) spec() ResizerSpec { return r.s }

func (r *optimalResizer) isTimeForResize(uint64) bool {
	last := r.checkNanos.Load()
	return last == 0 || time.Now().UnixNano() > last+int64(r.s.ActionInterval)
}

func (r *optimalResizer) setRecord(rec record) {
	r.rec = rec
	if rec.checkTime.IsZero() {
		r.checkNanos.Store(0)
	} else {
		r.checkNanos.Store(rec.checkTime.UnixNano())
	}
}

func (r *optimalResizer) report(routees []load, counter uint64, now time.Time) {
	size := len(routees)
	total, utilized := 0, 0
	for _, l := range routees {
		q := l.queued
		if l.busy {
			q++
		}
		total += q
		if q > 0 {
			utilized++
		}
	}
	full := utilized == size
	var st *streak
	if !full {
		st = &streak{start: now, highest: utilized}
		if r.rec.streak != nil {
			st.start = r.rec.streak.start
			st.highest = max(r.rec.streak.highest, utilized)
		}
	}
	if full && r.rec.streak == nil && !r.rec.checkTime.IsZero() {
		received := int64(counter) - int64(r.rec.messageCount)
		processed := int64(r.rec.totalQueue-total) + received
		if processed > 0 {
			last := now.Sub(r.rec.checkTime) / time.Duration(processed)
			if old, ok := r.perfLog[size]; ok {
				w := r.s.WeightOfLatestMetric
				last = time.Duration(float64(old)*(1-w) + float64(last)*w)
			}
			r.perfLog[size] = last
		}
	}
	r.setRecord(record{streak: st, messageCount: counter, totalQueue: total, checkTime: now})
}

func (r *optimalResizer) resize(routees []load, now time.Time) int {
	size := len(routees)
	change := 0
	switch {
	case r.rec.streak != nil && r.rec.streak.start.Before(now.Add(-r.s.DownsizeAfterUnderutilizedFor)):
		to := int(float64(r.rec.streak.highest) * r.s.DownsizeRatio)
		change = min(to-size, 0)
	case len(r.perfLog) == 0 || r.rec.streak != nil:
		change = 0
	case !r.stopExploring && r.rng.Float64() < r.s.ChanceOfExploration:
		change = r.explore(size)
	default:
		change = r.optimize(size)
	}
	return max(r.s.LowerBound, min(size+change, r.s.UpperBound)) - size
}

// optimize moves half the distance toward the fastest size logged within
// optimization_range sizes around the current one (half on each side).
func (r *optimalResizer) optimize(size int) int {
	each := r.s.OptimizationRange / 2
	var below, above []int
	for s := range r.perfLog {
		if s < size {
			below = append(below, s)
		} else {
			above = append(above, s)
		}
	}
	edge := func(sizes []int) int {
		if len(sizes) == 0 {
			return size
		}
		sort.Slice(sizes, func(i, j int) bool { return abs(sizes[i]-size) < abs(sizes[j]-size) })
		return sizes[min(each, len(sizes))-1]
	}
	if each == 0 {
		return 0
	}
	left, right := edge(below), edge(above)
	best, bestT := size, time.Duration(math.MaxInt64)
	for s, t := range r.perfLog {
		if s >= left && s <= right && (t < bestT || (t == bestT && s < best)) {
			best, bestT = s, t
		}
	}
	if bestT == time.Duration(math.MaxInt64) {
		return 0
	}
	move := float64(best-size) / 2
	if move < 0 {
		return int(math.Floor(move))
	}
	return int(math.Ceil(move))
}

// explore steps to a random nearby size: up to explore_step_size of the
// current size, at least one, down with chance_of_ramping_down_when_full.
func (r *optimalResizer) explore(size int) int {
	n := int(math.Ceil(float64(size) * r.s.ExploreStepSize))
	change := 1
	if n > 1 {
		change = max(1, r.rng.IntN(n))
	}
	if r.rng.Float64() < r.s.ChanceOfRampingDownWhenFull {
		return -change
	}
	return change
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
