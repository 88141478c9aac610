package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// replicas registers routees whose behaviour is chosen by spawn order:
// the i-th spawned routee is mk(i).
func replicas(h *harness, mk func(i int) process.Behavior) {
	var n atomic.Int64
	h.routee("app:worker", func() process.Behavior { return mk(int(n.Add(1)) - 1) })
}

func fixed(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

func TestScatterFirstReplyWinsAttributedToRoutee(t *testing.T) {
	h := newHarness(t)
	delays := []time.Duration{80 * time.Millisecond, 5 * time.Millisecond, 40 * time.Millisecond}
	replicas(h, func(i int) process.Behavior {
		return &replica{name: fmt.Sprintf("replica-%d", i), delay: fixed(delays[i])}
	})
	p := h.start(t, &Spec{Size: 3, Strategy: ScatterGather, Timeout: time.Second})
	fastest := p.snap.Load().pids[1]
	v, from, err := p.Ask("user-42", 0)
	if err != nil {
		t.Fatal(err)
	}
	if v != "replica-1:user-42" || from != fastest {
		t.Fatalf("got %v from %s, want replica-1's reply from %s", v, from, fastest)
	}
	// Through the pool's PID the same: the caller sees the routee as sender.
	v, from, err = h.node.Ask(p.PID(), process.Message{Payload: "k"}, 2*time.Second)
	if err != nil || v != "replica-1:k" || from != fastest {
		t.Fatalf("via pid: %v %s %v", v, from, err)
	}
	// The losers answer later, into refs already settled: dropped silently.
	time.Sleep(120 * time.Millisecond)
	if v := counterValue(t, h.env.Metrics, "router_scatter_gather_resolved_total", map[string]string{"outcome": OutcomeFirst}); v != 2 {
		t.Errorf("first: %v", v)
	}
	if v := counterValue(t, h.env.Metrics, "router_scatter_gather_latency_seconds", nil); v != 2 {
		t.Errorf("latency observations: %v", v)
	}
	if p.nOpen.Load() != 0 {
		t.Errorf("%d scatters still open", p.nOpen.Load())
	}
	if l := labelNames(t, h.env.Metrics, "router_scatter_gather_resolved_total"); len(l) != 1 || l[0] != "outcome" {
		t.Errorf("resolved labels %v: outcome only, no router label", l)
	}
	if l := labelNames(t, h.env.Metrics, "router_scatter_gather_latency_seconds"); len(l) != 0 {
		t.Errorf("latency labels %v: none", l)
	}
}

func TestScatterErrorReplyMovesOnAtOnce(t *testing.T) {
	h := newHarness(t)
	replicas(h, func(i int) process.Behavior {
		switch i {
		case 0:
			return &replica{fail: value.NewError(value.KindInternal, "disk on fire")}
		case 1:
			return &replica{name: "second", delay: fixed(30 * time.Millisecond)}
		}
		return &replica{name: "slow", delay: fixed(3 * time.Second)}
	})
	p := h.start(t, &Spec{Size: 3, Strategy: ScatterGather, Timeout: 4 * time.Second})
	start := time.Now()
	v, _, err := p.Ask("x", 0)
	if err != nil || v != "second:x" {
		t.Fatalf("%v %v", v, err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %s: the error must not make the scatter wait for the clock", el)
	}
}

func TestScatterAllFailed(t *testing.T) {
	h := newHarness(t)
	replicas(h, func(i int) process.Behavior {
		return &replica{fail: value.NewError(value.KindNotFound, "miss %d", i), delay: fixed(time.Duration(3-i) * 5 * time.Millisecond)}
	})
	p := h.start(t, &Spec{Size: 3, Strategy: ScatterGather, Timeout: 2 * time.Second})
	_, from, err := p.Ask("x", 0)
	agg := asAggregate(t, err)
	if agg.Message != "all 3 routees failed" || len(agg.Errors) != 3 {
		t.Fatalf("%s", agg.String())
	}
	// One error per routee, in scatter order (not in the order they failed).
	for i, e := range agg.Errors {
		if e.Kind != value.KindNotFound || e.Message != fmt.Sprintf("miss %d", i) {
			t.Errorf("errors[%d] = %v", i, e)
		}
	}
	if from != p.PID() {
		t.Errorf("failure attributed to %s, want the pool", from)
	}
	if v := counterValue(t, h.env.Metrics, "router_scatter_gather_resolved_total", map[string]string{"outcome": OutcomeAllFailed}); v != 1 {
		t.Errorf("all-failed: %v", v)
	}
}

func TestScatterTimeout(t *testing.T) {
	h := newHarness(t)
	replicas(h, func(int) process.Behavior { return &replica{delay: fixed(time.Hour)} })
	p := h.start(t, &Spec{Size: 3, Strategy: ScatterGather, Timeout: 50 * time.Millisecond})
	_, _, err := p.Ask("x", time.Second)
	agg := asAggregate(t, err)
	if agg.Message != "none of 3 routees replied within 50ms" || len(agg.Errors) != 3 {
		t.Fatalf("%s", agg.String())
	}
	for i, e := range agg.Errors {
		if e.Kind != value.KindTimeout {
			t.Errorf("errors[%d] = %v, want a timeout", i, e)
		}
	}
	for _, e := range agg.Errors {
		if !errors.Is(e, process.ErrTimeout) && !strings.Contains(e.Message, "ask timed out") {
			t.Errorf("member %q is not the routee's ask timeout", e.Message)
		}
	}
	if v := counterValue(t, h.env.Metrics, "router_scatter_gather_resolved_total", map[string]string{"outcome": OutcomeTimeout}); v != 1 {
		t.Errorf("timeout: %v", v)
	}
}

// A routee that raises fails its ask at once (the process core settles the
// asks of a process that exits): the scatter counts it as failed and moves
// on, instead of waiting for the clock.
func TestScatterCrashingRouteeCountsAsFailed(t *testing.T) {
	h := newHarness(t)
	replicas(h, func(i int) process.Behavior {
		return &replica{crash: func(v any) bool { return v == "boom" }}
	})
	p := h.start(t, &Spec{Size: 2, Strategy: ScatterGather, Timeout: time.Minute})
	start := time.Now()
	_, _, err := p.Ask("boom", 2*time.Minute)
	agg := asAggregate(t, err)
	if agg.Message != "all 2 routees failed" || len(agg.Errors) != 2 {
		t.Fatalf("routees that raise count as failed: %s", agg.String())
	}
	for i, e := range agg.Errors {
		if !errors.Is(e, process.ErrExited) || !strings.Contains(e.Message, "replica told to crash") {
			t.Errorf("errors[%d] = %v, want the routee's exit", i, e)
		}
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("the scatter waited %s for routees that had crashed", took)
	}
	eventually(t, "the crashed routees restarted", func() bool { return len(p.snap.Load().pids) == 2 })
}

func TestScatterNoRoutees(t *testing.T) {
	h := newHarness(t)
	replicas(h, func(int) process.Behavior { return &replica{crash: func(any) bool { return true }} })
	p := h.start(t, &Spec{Size: 2, Strategy: ScatterGather, Timeout: time.Second})
	h.reg.failSpawn.Store(true) // crashed routees cannot come back
	for _, pid := range p.snap.Load().pids {
		_ = h.node.Send(pid, process.Message{Payload: "die"})
	}
	eventually(t, "every routee gone", func() bool { return len(p.snap.Load().pids) == 0 })
	_, _, err := p.Ask("x", 0)
	agg := asAggregate(t, err)
	if agg.Message != "no routees left to scatter to" || agg.Errors == nil || len(agg.Errors) != 0 {
		t.Fatalf("%q %v", agg.Message, agg.Errors)
	}
	// A failure (all-failed), but no scatter ran: the winner-latency
	// histogram observes nothing, as for no-reply-target.
	if v := counterValue(t, h.env.Metrics, "router_scatter_gather_resolved_total", map[string]string{"outcome": OutcomeAllFailed}); v != 1 {
		t.Errorf("all-failed counted %v times", v)
	}
	if v := counterValue(t, h.env.Metrics, "router_scatter_gather_latency_seconds", nil); v != 0 {
		t.Errorf("a scatter over no routees observed latency %v times", v)
	}
}

func TestScatterPlainSendDropped(t *testing.T) {
	h := newHarness(t)
	var seen atomic.Int64
	replicas(h, func(int) process.Behavior { return &replica{seen: &seen} })
	p := h.start(t, &Spec{Size: 3, Strategy: ScatterGather, Timeout: time.Second})
	if err := p.Tell("x"); err != nil {
		t.Fatalf("a plain send must not fail: %v", err)
	}
	if err := h.node.Send(p.PID(), process.Message{Payload: "y"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both drops counted", func() bool {
		return counterValue(t, h.env.Metrics, "router_scatter_gather_resolved_total", map[string]string{"outcome": OutcomeNoReplyTarget}) == 2
	})
	if !h.node.Alive(p.PID()) {
		t.Fatal("the router crashed")
	}
	if seen.Load() != 0 {
		t.Errorf("%d routees got a message nobody could answer", seen.Load())
	}
	if v := counterValue(t, h.env.Metrics, "router_scatter_gather_latency_seconds", nil); v != 0 {
		t.Errorf("no-reply-target observed latency %v times", v)
	}
	if !strings.Contains(h.logs.String(), "without a reply target dropped") || !strings.Contains(h.logs.String(), "entry=app:pool") {
		t.Errorf("warning missing: %s", h.logs.String())
	}
	// Still serving asks.
	if _, _, err := p.Ask("z", 0); err != nil {
		t.Fatal(err)
	}
}

func TestStopFailsOpenScattersAtOnce(t *testing.T) {
	h := newHarness(t)
	var seen atomic.Int64
	replicas(h, func(int) process.Behavior { return &replica{delay: fixed(time.Hour), seen: &seen} })
	p := h.start(t, &Spec{Size: 3, Strategy: ScatterGather, Timeout: time.Hour})
	const n = 20
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			_, _, err := p.Ask(i, 2*time.Hour)
			errs <- err
		}()
	}
	// Scattered, not only open: a race is open before it has sent its
	// asks, and one stopped then observes no latency.
	eventually(t, "every scatter sent to the 3 routees", func() bool { return p.nOpen.Load() == n && seen.Load() == 3*n })
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		agg := asAggregate(t, <-errs)
		if agg.Message != "stopped while the scatter was still open" || len(agg.Errors) != 0 {
			t.Fatalf("%s", agg.String())
		}
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("stop took %s", el)
	}
	if v := counterValue(t, h.env.Metrics, "router_scatter_gather_resolved_total", map[string]string{"outcome": OutcomeStopped}); v != n {
		t.Errorf("stopped: %v", v)
	}
	if v := counterValue(t, h.env.Metrics, "router_scatter_gather_latency_seconds", nil); v != n {
		t.Errorf("latency observed %v times, want %d", v, n)
	}
}

// A restart is a stop and a start: the open scatters of the old incarnation
// fail at once, and the new one serves.
func TestRestartFailsOpenScatters(t *testing.T) {
	h := newHarness(t)
	var slow atomic.Bool
	slow.Store(true)
	replicas(h, func(int) process.Behavior {
		return &replica{delay: func() time.Duration {
			if slow.Load() {
				return time.Hour
			}
			return 0
		}}
	})
	spec := &Spec{Size: 2, Strategy: ScatterGather, Timeout: time.Hour}
	p := h.start(t, spec)
	errc := make(chan error, 1)
	go func() { _, _, err := p.Ask("x", 2*time.Hour); errc <- err }()
	eventually(t, "the scatter open", func() bool { return p.nOpen.Load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if agg := asAggregate(t, <-errc); agg.Message != msgStopped {
		t.Fatal(agg)
	}
	slow.Store(false)
	q := h.start(t, spec)
	if _, _, err := q.Ask("y", 0); err != nil {
		t.Fatal(err)
	}
}

// The fan-out never blocks the pool's loop: a thousand scatters overlap,
// so they all finish in about one routee latency, not a thousand.
func TestThousandConcurrentScattersOverlap(t *testing.T) {
	h := newHarness(t)
	const latency = 50 * time.Millisecond
	replicas(h, func(int) process.Behavior { return &replica{delay: fixed(latency)} })
	p := h.start(t, &Spec{Size: 3, Strategy: ScatterGather, Timeout: 5 * time.Second})
	const n = 1000
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half through the pool's PID (its loop), half through the Go API.
			var err error
			if i%2 == 0 {
				_, _, err = h.node.Ask(p.PID(), process.Message{Payload: i}, 10*time.Second)
			} else {
				_, _, err = p.Ask(i, 10*time.Second)
			}
			if err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if failed.Load() != 0 {
		t.Fatalf("%d scatters failed", failed.Load())
	}
	// Serialized they would take n*latency = 50s; overlapping, one latency
	// plus scheduling. The bound is generous for a loaded 2-core machine.
	if el > 40*latency {
		t.Errorf("1000 scatters took %s (routee latency %s): they did not overlap", el, latency)
	}
	t.Logf("1000 concurrent scatters over 3 routees of %s latency: %s", latency, el)
}

func TestCallerTimeoutRule(t *testing.T) {
	h := newHarness(t)
	replicas(h, func(int) process.Behavior { return &replica{} })
	p := h.start(t, &Spec{Size: 1, Strategy: ScatterGather, Timeout: 250 * time.Millisecond})
	if got := p.CallerTimeout(0); got != 5*time.Second {
		t.Errorf("default with a 250ms pool: %s, want 5s", got)
	}
	ctx := context.Background()
	spec := &Spec{Routee: "app:worker", Size: 1, Strategy: ScatterGather, Timeout: 8 * time.Second}
	if ok, err := p.Update(ctx, &registry.Entry{ID: "app:pool", Spec: spec}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if got := p.CallerTimeout(0); got != 8500*time.Millisecond {
		t.Errorf("default with an 8s pool: %s, want 8.5s", got)
	}
	if got := p.CallerTimeout(9 * time.Second); got != 9*time.Second || strings.Contains(h.logs.String(), "caller timeout") {
		t.Errorf("a caller above the pool: %s, no warning", got)
	}
	for i := 0; i < 3; i++ {
		if got := p.CallerTimeout(8 * time.Second); got != 8*time.Second {
			t.Errorf("an explicit timeout is kept: %s", got)
		}
	}
	if c := countOf(h.logs.String(), "caller timeout is not above the router's timeout"); c != 1 {
		t.Errorf("warned %d times, want once", c)
	}
}

func countOf(s, sub string) int {
	n := 0
	for {
		i := indexOf(s, sub)
		if i < 0 {
			return n
		}
		n++
		s = s[i+len(sub):]
	}
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestTailChopping(t *testing.T) {
	t.Run("the next routee after interval", func(t *testing.T) {
		h := newHarness(t)
		var asked atomic.Int64
		replicas(h, func(int) process.Behavior {
			return &replica{seen: &asked, delay: func() time.Duration {
				if asked.Load() == 1 {
					return time.Hour // the first one asked hangs
				}
				return 0
			}}
		})
		p := h.start(t, &Spec{Size: 3, Strategy: TailChopping, Timeout: 2 * time.Second, Interval: 20 * time.Millisecond})
		start := time.Now()
		_, from, err := p.Ask("x", 0)
		if err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		if el < 20*time.Millisecond || el > time.Second {
			t.Errorf("answered after %s with a 20ms interval", el)
		}
		if from.IsZero() || from == p.PID() {
			t.Errorf("from %s", from)
		}
		if asked.Load() != 2 {
			t.Errorf("%d routees asked, want 2", asked.Load())
		}
	})
	t.Run("one at a time when the first answers", func(t *testing.T) {
		h := newHarness(t)
		var asked atomic.Int64
		replicas(h, func(int) process.Behavior { return &replica{seen: &asked} })
		p := h.start(t, &Spec{Size: 3, Strategy: TailChopping, Timeout: time.Second, Interval: 200 * time.Millisecond})
		for i := 0; i < 10; i++ {
			if _, _, err := p.Ask(i, 0); err != nil {
				t.Fatal(err)
			}
		}
		if asked.Load() != 10 {
			t.Errorf("%d asks for 10 messages", asked.Load())
		}
	})
	t.Run("an error moves on at once", func(t *testing.T) {
		h := newHarness(t)
		var asked atomic.Int64
		replicas(h, func(int) process.Behavior {
			return &replica{seen: &asked, fail: value.NewError(value.KindNotFound, "miss")}
		})
		p := h.start(t, &Spec{Size: 3, Strategy: TailChopping, Timeout: 10 * time.Second, Interval: 5 * time.Second})
		start := time.Now()
		_, _, err := p.Ask("x", 0)
		agg := asAggregate(t, err)
		if agg.Message != "all 3 routees failed" || len(agg.Errors) != 3 {
			t.Fatalf("%s", agg.String())
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("took %s: errors must not wait for the 5s interval", el)
		}
	})
	t.Run("timeout with the aggregate shape", func(t *testing.T) {
		h := newHarness(t)
		var asked atomic.Int64
		replicas(h, func(int) process.Behavior { return &replica{seen: &asked, delay: fixed(time.Hour)} })
		// An interval far past the deadline: only the first routee is
		// asked, whatever the machine's load does to the timers (with a
		// 25ms interval against a 60ms deadline, a late timer made it 1
		// or 4 instead of 2 or 3), and the routees never asked still
		// count in the aggregate, as timeouts.
		p := h.start(t, &Spec{Size: 4, Strategy: TailChopping, Timeout: 60 * time.Millisecond, Interval: time.Hour})
		_, _, err := p.Ask("x", time.Second)
		agg := asAggregate(t, err)
		if agg.Message != "none of 4 routees replied within 60ms" || len(agg.Errors) != 4 {
			t.Fatalf("%s", agg.String())
		}
		for _, e := range agg.Errors {
			if e.Kind != value.KindTimeout {
				t.Errorf("member %v", e)
			}
		}
		// The routee counts the ask when it receives it, maybe after the
		// caller heard of the timeout.
		eventually(t, "the first routee asked", func() bool { return asked.Load() >= 1 })
		if n := asked.Load(); n != 1 {
			t.Errorf("%d routees asked before a 60ms deadline at 1h intervals", n)
		}
		if v := counterValue(t, h.env.Metrics, "router_scatter_gather_resolved_total", map[string]string{"outcome": OutcomeTimeout}); v != 1 {
			t.Errorf("timeout outcome %v", v)
		}
	})
}

// settled records what a race answered its caller.
type settled struct {
	from process.PID
	v    any
	err  error
}

type recordingTarget chan settled

func (r recordingTarget) Settle(_ uint64, from process.PID, v any, err error) bool {
	r <- settled{from, v, err}
	return true
}

// A scatter is the reply target of its asks: each routee's first answer
// within the deadline settles that routee's ask (msg:reply returns true),
// the first value wins the scatter, a second answer from one routee and
// any answer past the deadline are dropped (false).
func TestScatterIsItsOwnReplyTarget(t *testing.T) {
	h := newHarness(t)
	echoRoutee(h, nil)
	p := h.start(t, &Spec{Size: 1, Strategy: ScatterGather})
	inboxes := make([]chan process.Message, 3)
	pids := make([]process.PID, 3)
	for i := range pids {
		inboxes[i] = make(chan process.Message, 4)
		in := inboxes[i]
		pid, err := h.node.SpawnFunc(func(pr *process.Proc) (any, error) {
			for {
				m, err := pr.Receive(pr.Context())
				if err != nil {
					return nil, nil
				}
				in <- m
			}
		}, process.SpawnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = h.node.Stop(context.Background(), pid) })
		pids[i] = pid
	}
	scatter := func(timeout time.Duration) (recordingTarget, []process.Message) {
		target := make(recordingTarget, 2)
		p.startRace(ScatterGather, timeout, 0, routees{pids: pids}, process.Message{Topic: "t", Payload: "x"}, target, 7)
		msgs := make([]process.Message, len(pids))
		for i, in := range inboxes {
			msgs[i] = <-in
		}
		return target, msgs
	}
	target, msgs := scatter(time.Minute)
	reply := func(i int, v any, err error) bool {
		t.Helper()
		ok, rerr := msgs[i].Reply(pids[i], v, err)
		if rerr != nil {
			t.Fatal(rerr)
		}
		return ok
	}
	if !reply(1, nil, value.NewError(value.KindNotFound, "miss")) {
		t.Fatal("a routee's first answer (an error) did not settle its ask")
	}
	if reply(1, "late", nil) {
		t.Fatal("a routee's second answer settled something")
	}
	if !reply(0, "first", nil) {
		t.Fatal("the winner's reply did not settle its ask")
	}
	if got := <-target; got.v != "first" || got.from != pids[0] || got.err != nil {
		t.Fatalf("caller got %+v", got)
	}
	if !reply(2, "second", nil) {
		t.Fatal("a loser that answered in time did not settle its own ask")
	}
	select {
	case got := <-target:
		t.Fatalf("the caller was answered twice: %+v", got)
	default:
	}
	// Past the deadline every unanswered routee counts as timed out, and
	// an answer after it is late.
	target, msgs = scatter(30 * time.Millisecond)
	got := <-target
	agg := asAggregate(t, got.err)
	if agg.Message != "none of 3 routees replied within 30ms" || len(agg.Errors) != 3 {
		t.Fatalf("%s", agg.String())
	}
	if reply(0, "too late", nil) {
		t.Fatal("a reply after the deadline settled its ask")
	}
	eventually(t, "no scatter left open", func() bool { return p.nOpen.Load() == 0 })
}

// silent takes every message and never answers.
type silent struct{}

func (silent) Receive(process.Context, process.Message) {}

// A tell with a reply target does not wait for its scatter, so nothing
// but a bound keeps a flood of them to routees that never answer from
// holding memory until their timeouts: past MaxOpenScatters a scatter is
// refused with a limit error.
func TestOpenScattersAreBounded(t *testing.T) {
	h := newHarness(t)
	replicas(h, func(int) process.Behavior { return silent{} })
	p := h.start(t, &Spec{Size: 2, Strategy: ScatterGather, Timeout: time.Hour})
	target := process.ForwardReply("t", func(process.Message) error { return nil })
	for i := range MaxOpenScatters {
		if err := p.Route(process.Message{Payload: i}.WithReply(target, 0)); err != nil {
			t.Fatalf("scatter %d refused: %v", i, err)
		}
	}
	err := p.Route(process.Message{Payload: "one more"}.WithReply(target, 0))
	if !errors.Is(err, ErrTooManyScatters) || value.KindOf(err) != value.KindLimit {
		t.Fatalf("scatter past the bound: %v, want a limit error", err)
	}
	if _, _, err := p.Ask("and an ask", time.Second); !errors.Is(err, ErrTooManyScatters) {
		t.Fatalf("ask past the bound: %v", err)
	}
}
