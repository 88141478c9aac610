package pool

import (
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// load drives a pool with tells, keeping about backlog messages in flight,
// until stop is closed.
func drive(p *Pool, done *atomic.Int64, backlog int64, stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var sent int64
		for {
			select {
			case <-stop:
				out <- sent
				return
			default:
			}
			if sent-done.Load() >= backlog {
				time.Sleep(200 * time.Microsecond)
				continue
			}
			if p.Tell(sent) == nil {
				sent++
			}
		}
	}()
	return out
}

func TestDefaultResizerGrowsUnderLoadAndShrinksWhenIdle(t *testing.T) {
	// Restored in a cleanup registered before the pool's, so it runs after
	// the pool (which reads it) has stopped.
	prev := idleResizeInterval
	t.Cleanup(func() { idleResizeInterval = prev })
	idleResizeInterval = 20 * time.Millisecond
	h := newHarness(t)
	var done atomic.Int64
	h.routee("app:worker", func() process.Behavior { return &worker{work: 2 * time.Millisecond, done: &done} })
	rs := DefaultResizerSpec()
	rs.LowerBound, rs.UpperBound = 2, 6
	p := h.start(t, &Spec{Strategy: RoundRobin, Resizer: &rs}) // size 0: the initial resize starts it at the lower bound
	if p.Size() != 2 {
		t.Fatalf("initial size %d, want the lower bound 2", p.Size())
	}
	stop := make(chan struct{})
	sentc := drive(p, &done, 200, stop)
	eventually(t, "growth to the upper bound under load", func() bool { return p.Size() == 6 })
	close(stop)
	sent := <-sentc
	eventually(t, "every message processed", func() bool { return done.Load() == sent })
	eventually(t, "shrinking back to the lower bound when idle", func() bool { return p.Size() == 2 })
	if up := counterValue(t, h.env.Metrics, "router_pool_resizes_total", map[string]string{"pool": "app:pool", "direction": "up"}); up < 2 {
		t.Errorf("resizes up %v", up)
	}
	if down := counterValue(t, h.env.Metrics, "router_pool_resizes_total", map[string]string{"pool": "app:pool", "direction": "down"}); down < 1 {
		t.Errorf("resizes down %v", down)
	}
	eventually(t, "removed routees stopped", func() bool { return h.node.Count() == 1+2 })
}

// contendedUnit is the time one message of a contended routee takes
// while at most four work at once. It must dwarf what the message costs
// in CPU (send, dispatch, the race detector) on a loaded machine: when
// that cost dominates, every size gives the same throughput and there is
// no fastest size to find.
const contendedUnit = 3 * time.Millisecond

// contended is a routee whose work is a shared resource that serves four
// at a time well and degrades beyond: the pool's throughput peaks at four
// routees.
type contended struct {
	inflight *atomic.Int64
	done     *atomic.Int64
}

func (c *contended) Receive(process.Context, process.Message) {
	n := c.inflight.Add(1)
	f := max(1, float64(n)/4)
	time.Sleep(time.Duration(float64(contendedUnit) * f * f))
	c.inflight.Add(-1)
	c.done.Add(1)
}

func TestOptimalResizerFindsTheFastestSize(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of load")
	}
	h := newHarness(t)
	var done, inflight atomic.Int64
	h.routee("app:worker", func() process.Behavior { return &contended{inflight: &inflight, done: &done} })
	rs := OptimalResizerSpec()
	rs.LowerBound, rs.UpperBound = 1, 12
	rs.ActionInterval = 50 * time.Millisecond // a few dozen messages at the fastest size
	p := h.start(t, &Spec{Size: 1, Strategy: RoundRobin, Resizer: &rs})
	stop := make(chan struct{})
	sentc := drive(p, &done, 120, stop)
	var sizes []int
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		sizes = append(sizes, p.Size())
	}
	close(stop)
	sent := <-sentc
	eventually(t, "every message processed", func() bool { return done.Load() == sent })
	late := append([]int(nil), sizes[len(sizes)/2:]...)
	sort.Ints(late)
	median := late[len(late)/2]
	t.Logf("sizes over time: %v", sizes)
	if median < 3 || median > 7 {
		t.Errorf("median size in the second half %d; the fastest size is 4", median)
	}
	if sizes[0] > 3 && median <= sizes[0] {
		t.Error("the pool did not grow from 1")
	}
}

func TestOptimalResizerDownsizesAfterUnderutilization(t *testing.T) {
	h := newHarness(t)
	h.routee("app:worker", func() process.Behavior { return &worker{} })
	rs := OptimalResizerSpec()
	rs.LowerBound, rs.UpperBound = 1, 12
	rs.ActionInterval = 10 * time.Millisecond
	rs.DownsizeAfterUnderutilizedFor = 50 * time.Millisecond
	p := h.start(t, &Spec{Size: 8, Strategy: RoundRobin, Resizer: &rs})
	// Idle: nobody is busy, the highest utilization is 0, so after the
	// streak the pool goes down to 0 * 0.8, kept at the lower bound.
	eventually(t, "downsizing to the lower bound", func() bool { return p.Size() == 1 })
}
