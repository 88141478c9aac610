package lua

import (
	"testing"
	"time"
)

// TestTimerListSweepIsAmortised: with many time.after timers pending (a
// deadline per message in a select loop), adding one must not scan every
// pending timer. 200,000 adds take milliseconds when the sweeps are
// amortised and tens of seconds when each add scans the list.
func TestTimerListSweepIsAmortised(t *testing.T) {
	var l timerList
	start := time.Now()
	for range 200_000 {
		l.add(&afterTimer{})
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("200000 pending timers took %s to add", d)
	}
	if len(l.list) != 200_000 {
		t.Fatalf("pending timers kept: %d of 200000", len(l.list))
	}
	// Fired timers are swept out.
	for _, at := range l.list {
		at.fired.Store(true)
	}
	for range 2 * len(l.list) {
		at := &afterTimer{}
		at.fired.Store(true)
		l.add(at)
	}
	if len(l.list) > minSweep {
		t.Fatalf("fired timers are not swept: %d kept", len(l.list))
	}
}

func TestTime(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("main", `
return { main = function(go_now)
  local t0 = time.now()
  assert(math.abs(t0 - go_now) < 5000, "now is epoch milliseconds")
  assert(time.sleep("20ms"))
  local t1 = time.now()
  assert(t1 - t0 >= 19, "slept " .. (t1 - t0))
  local after = time.after(10)
  local v, ok = after:receive()
  assert(ok and v >= t1, "after yields the time it fired")
  for i = 1, 200 do time.after(100000) end
  assert(not pcall(time.sleep, "soon"), "bad duration raises")
  assert(not pcall(time.sleep, -1), "negative raises")
  assert(not pcall(time.after, {}), "table raises")
  return "ok"
end }`)
	h.Check(e, float64(time.Now().UnixMilli()))
}
