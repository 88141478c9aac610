package pgscope

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// blockLoop parks the loop on a command until the returned func is called.
func (h *harness) blockLoop() (release func()) {
	h.t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	if err := h.s.loop.Submit(func() { close(entered); <-gate }); err != nil {
		h.t.Fatal(err)
	}
	<-entered
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// A flood past action_queue_max_size is refused with a limit error; the
// warning is logged at action_queue_size; nothing hangs, and everything
// accepted is applied.
func TestQueueFloodRefused(t *testing.T) {
	h := newHarness(t, func(s *Spec) { s.ActionQueueSize = 4; s.ActionQueueMaxSize = 8 })
	release := h.blockLoop()
	defer release()
	const callers = 40
	pids := make([]process.PID, callers)
	for i := range pids {
		pids[i] = h.pid()
	}
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for _, p := range pids {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- h.s.Join(p, "flood") }()
	}
	// With the loop parked, exactly 8 joins fit; the other 32 must have
	// been refused already, without waiting for the loop.
	refused := 0
	for range callers - 8 {
		err := <-errs
		if !errors.Is(err, process.ErrQueueFull) || value.KindOf(err) != value.KindLimit {
			t.Fatalf("err = %v (kind %s), want a limit error", err, value.KindOf(err))
		}
		if !strings.Contains(err.Error(), "test:pg") {
			t.Fatalf("error does not name the scope: %v", err)
		}
		refused++
	}
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("accepted join failed: %v", err)
		}
	}
	if n := len(h.s.GetMembers("flood")); n != 8 {
		t.Fatalf("%d members, want the 8 accepted", n)
	}
	if got := metricValue(t, h.s.m.refused); got != float64(refused) {
		t.Fatalf("refused metric = %v, want %d", got, refused)
	}
	if !strings.Contains(h.logs.String(), "action queue is nearing capacity") || !strings.Contains(h.logs.String(), "entry=test:pg") {
		t.Fatalf("no queue warning with the entry ID in the log:\n%s", h.logs.String())
	}
}

// A member's EXIT is never lost to a full queue.
func TestExitSurvivesFullQueue(t *testing.T) {
	h := newHarness(t, func(s *Spec) { s.ActionQueueSize = 1; s.ActionQueueMaxSize = 2 })
	p := h.pid()
	if err := h.s.Join(p, "g"); err != nil {
		t.Fatal(err)
	}
	release := h.blockLoop()
	filler := h.pid()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = h.s.Join(filler, "other") }()
	}
	eventually(t, "queue full", func() bool { return h.s.loop.Len() == 2 })
	h.kill(p)
	mustKind(t, h.s.Join(filler, "x"), process.ErrQueueFull)
	release()
	wg.Wait()
	eventually(t, "dead member removed", func() bool { return len(h.s.GetMembers("g")) == 0 })
}

// max_groups and max_members_per_group (multi-joins count) refuse the
// whole batch with a limit error.
func TestGroupLimits(t *testing.T) {
	t.Run("max_groups", func(t *testing.T) {
		h := newHarness(t, func(s *Spec) { s.MaxGroups = 2 })
		p, q := h.pid(), h.pid()
		if err := h.s.Join(p, "a", "b"); err != nil {
			t.Fatal(err)
		}
		err := h.s.Join(q, "a", "c")
		mustKind(t, err, ErrTooManyGroups)
		if value.KindOf(err) != value.KindLimit {
			t.Fatalf("kind = %s", value.KindOf(err))
		}
		if got := h.s.GetMembers("a"); !equalPIDs(got, []process.PID{p}) {
			t.Fatalf("refused batch applied in part: a = %v", got)
		}
		if err := h.s.Join(q, "a", "b"); err != nil {
			t.Fatalf("joining existing groups: %v", err)
		}
		if err := h.s.Leave(p, "b"); err != nil {
			t.Fatal(err)
		}
		if err := h.s.Leave(q, "b"); err != nil {
			t.Fatal(err)
		}
		if err := h.s.Join(q, "c"); err != nil {
			t.Fatalf("a vanished group frees its slot: %v", err)
		}
	})
	t.Run("max_members_per_group", func(t *testing.T) {
		h := newHarness(t, func(s *Spec) { s.MaxMembersPerGroup = 3 })
		p, q := h.pid(), h.pid()
		if err := h.s.Join(p, "g", "g"); err != nil {
			t.Fatal(err)
		}
		err := h.s.Join(q, "g", "g")
		mustKind(t, err, ErrGroupFull)
		if value.KindOf(err) != value.KindLimit {
			t.Fatalf("kind = %s", value.KindOf(err))
		}
		if err := h.s.Join(q, "g"); err != nil {
			t.Fatal(err)
		}
		mustKind(t, h.s.Join(p, "g"), ErrGroupFull)
		if n := len(h.s.GetMembers("g")); n != 3 {
			t.Fatalf("%d members", n)
		}
	})
}

// A subscriber with a full buffer loses events for itself only; the loss
// is counted per subscriber and in pg_monitor_dropped_total.
func TestMonitorBufferDrops(t *testing.T) {
	h := newHarness(t, func(s *Spec) { s.MonitorBuffer = 2 })
	slow, _, err := h.s.Monitor(process.PID{}, "g")
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close(false)
	fast, _, err := h.s.Events(process.PID{})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close(false)
	p := h.pid()
	for range 5 {
		if err := h.s.Join(p, "g"); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, fast, MemberJoined, "g", p)
	}
	if fast.Dropped() != 0 {
		t.Fatalf("reading subscriber dropped %d", fast.Dropped())
	}
	if slow.Dropped() != 3 {
		t.Fatalf("slow subscriber dropped %d, want 3", slow.Dropped())
	}
	if n := len(slow.C()); n != 2 {
		t.Fatalf("slow buffer holds %d, want 2", n)
	}
	if got := metricValue(t, h.s.m.vecs.dropped.WithLabelValues("test:pg")); got != 3 {
		t.Fatalf("pg_monitor_dropped_total = %v", got)
	}
}

// Update applies limits and timeouts in place.
func TestUpdateInPlace(t *testing.T) {
	h := newHarness(t, nil)
	p := h.pid()
	if err := h.s.Join(p, "a"); err != nil {
		t.Fatal(err)
	}
	spec := DefaultSpec()
	spec.MaxGroups = 1
	spec.ActionQueueMaxSize = 1
	spec.ActionQueueSize = 1
	applied, err := h.s.Update(context.Background(), &registry.Entry{ID: "test:pg", Spec: &spec})
	if err != nil || !applied {
		t.Fatal(applied, err)
	}
	mustKind(t, h.s.Join(p, "b"), ErrTooManyGroups)
	if got := h.s.GetMembers("a"); len(got) != 1 {
		t.Fatal("update lost members")
	}
	release := h.blockLoop()
	go func() { _ = h.s.Join(p, "a") }()
	eventually(t, "queue to fill", func() bool { return h.s.loop.Len() == 1 })
	mustKind(t, h.s.Join(p, "a"), process.ErrQueueFull)
	release()
	if _, err := h.s.Update(context.Background(), &registry.Entry{ID: "test:pg", Spec: "bogus"}); err == nil {
		t.Fatal("update with a foreign spec accepted")
	}
}

// A caller whose command the loop does not reach within protocol_timeout
// gets a timeout error instead of waiting forever.
func TestCallTimeout(t *testing.T) {
	h := newHarness(t, func(s *Spec) { s.ProtocolTimeout = 20_000_000 })
	release := h.blockLoop()
	err := h.s.Join(h.pid(), "g")
	release()
	mustKind(t, err, ErrTimeout)
	if value.KindOf(err) != value.KindTimeout {
		t.Fatalf("kind = %s", value.KindOf(err))
	}
}

// 1,000 concurrent joiners (each joining, reading and leaving) and
// readers, under -race: reads never block and the scope ends consistent.
func TestConcurrentJoinersAndReaders(t *testing.T) {
	h := newHarness(t, func(s *Spec) { s.ActionQueueMaxSize = 4096; s.ActionQueueSize = 4096 })
	const joiners = 1000
	pids := make([]process.PID, joiners)
	for i := range pids {
		pids[i] = h.pid()
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	// Two readers, each yielding between reads: eight that spun flat out
	// starved the scope's loop on two loaded cores under -race, and the
	// joins timed out (5 s) instead of testing the snapshots.
	for r := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				runtime.Gosched()
				m := h.s.GetMembers("shared")
				for _, p := range m {
					if p.IsZero() {
						t.Error("zero pid in a snapshot")
						return
					}
				}
				if r%2 == 0 {
					_ = h.s.WhichGroups()
				} else {
					_ = h.s.GetLocalMembers("shared")
				}
			}
		}()
	}
	var wg sync.WaitGroup
	errs := make(chan error, joiners)
	for i, p := range pids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := "own-" + string(rune('a'+i%26))
			if err := h.s.Join(p, "shared", own); err != nil {
				errs <- err
				return
			}
			found := false
			for _, m := range h.s.GetMembers("shared") {
				found = found || m == p
			}
			if !found {
				errs <- errors.New("a join was not visible to its own caller")
				return
			}
			if i%2 == 0 {
				errs <- h.s.Leave(p, own)
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.s.GetMembers("shared")); n != joiners {
		t.Fatalf("shared has %d members, want %d", n, joiners)
	}
	total := 0
	for _, g := range h.s.WhichGroups() {
		if g != "shared" {
			total += len(h.s.GetMembers(g))
		}
	}
	if total != joiners/2 {
		t.Fatalf("own groups hold %d, want %d", total, joiners/2)
	}
}

// metricValue reads a counter or gauge.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	switch {
	case out.Counter != nil:
		return out.Counter.GetValue()
	case out.Gauge != nil:
		return out.Gauge.GetValue()
	}
	t.Fatal("not a counter or gauge")
	return 0
}

// A group's name is a label kept in the state, every event and the views:
// one past process.MaxNameSize is refused with a limit error by every
// operation that names a group, and a broadcast's topic past
// process.MaxTopicSize too.
func TestLongGroupNamesRefused(t *testing.T) {
	h := newHarness(t, nil)
	p := h.pid()
	long := strings.Repeat("g", process.MaxNameSize+1)
	ops := map[string]func() error{
		"join":      func() error { return h.s.Join(p, "ok", long) },
		"leave":     func() error { return h.s.Leave(p, long) },
		"monitor":   func() error { _, _, err := h.s.Monitor(p, long); return err },
		"broadcast": func() error { _, err := h.s.Broadcast(p, long, "t", nil); return err },
		"topic": func() error {
			_, err := h.s.Broadcast(p, "ok", strings.Repeat("t", process.MaxTopicSize+1), nil)
			return err
		},
	}
	for name, op := range ops {
		err := op()
		if !errors.Is(err, process.ErrTooLong) || value.KindOf(err) != value.KindLimit || len(err.Error()) > 200 {
			t.Fatalf("%s: err = %.300v (kind %s), want a short limit error", name, err, value.KindOf(err))
		}
	}
	if n := len(h.s.GetMembers("ok")); n != 0 {
		t.Fatalf("the refused batch joined %d", n)
	}
	if err := h.s.Join(p, long[:process.MaxNameSize]); err != nil {
		t.Fatal(err)
	}
}

// A process holds at most MaxSubscriptionsPerProcess subscriptions of a
// scope: one more, of a group or of the whole scope, is a limit error;
// closing one makes room; Go code's subscriptions are not counted.
func TestSubscriptionsPerProcessBounded(t *testing.T) {
	h := newHarness(t, nil)
	p := h.pid()
	subs := make([]*Subscription, 0, MaxSubscriptionsPerProcess)
	for i := range MaxSubscriptionsPerProcess {
		sub, _, err := h.s.Monitor(p, "hot")
		if err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
		subs = append(subs, sub)
	}
	_, _, err := h.s.Monitor(p, "other")
	if !errors.Is(err, ErrTooManySubscriptions) || value.KindOf(err) != value.KindLimit || !strings.Contains(err.Error(), "at most 1000") {
		t.Fatalf("monitor past the bound: %v", err)
	}
	if _, _, err := h.s.Events(p); !errors.Is(err, ErrTooManySubscriptions) {
		t.Fatalf("events past the bound: %v", err)
	}
	if sub, _, err := h.s.Monitor(process.PID{}, "hot"); err != nil {
		t.Fatalf("a Go subscription: %v", err)
	} else {
		sub.Close(true)
	}
	subs[0].Close(true)
	testutil.Eventually(t, "room after a close", func() bool {
		sub, _, err := h.s.Monitor(p, "other")
		if err == nil {
			sub.Close(true)
		}
		return err == nil
	})
}

// An event is built once for all its subscribers: every script that
// monitors the group is handed the same value.
func TestEventValueSharedBySubscribers(t *testing.T) {
	h := newHarness(t, nil)
	var sinks [3]*recordSink
	for i := range sinks {
		sinks[i] = &recordSink{}
		if _, _, err := h.s.Subscribe("g", SubscribeOptions{Sink: sinks[i]}); err != nil {
			t.Fatal(err)
		}
	}
	p := h.pid()
	if err := h.s.Join(p, "g"); err != nil {
		t.Fatal(err)
	}
	var first map[string]any
	for i, k := range sinks {
		v := k.wait(t).Value()
		if v["kind"] != "member.joined" || v["group"] != "g" || len(v["pids"].([]any)) != 1 || v["pids"].([]any)[0] != p.String() {
			t.Fatalf("value %v", v)
		}
		if i == 0 {
			first = v
		} else if reflect.ValueOf(v).UnsafePointer() != reflect.ValueOf(first).UnsafePointer() {
			t.Fatal("the event's value was built again for another subscriber")
		}
	}
}

// recordSink keeps the events it is offered.
type recordSink struct {
	mu  sync.Mutex
	got []Event
}

func (r *recordSink) Offer(ev Event) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, ev)
	return true
}

func (r *recordSink) Close() {}

func (r *recordSink) wait(t *testing.T) Event {
	t.Helper()
	var ev Event
	testutil.Eventually(t, "an event", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.got) > 0 {
			ev = r.got[0]
			return true
		}
		return false
	})
	return ev
}
