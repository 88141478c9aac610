package lua

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// Hot upgrade under a hostile script: a script may fail; the node may not.

// upgrade_timeout is bounded both ways, with an error that names the file,
// the entry and the field: the reload waits for it.
func TestUpgradeTimeoutField(t *testing.T) {
	h := newHarness(t)
	h.Write("ok.lua", `return { main = function() end }`)
	for _, tc := range []struct{ name, value, want string }{
		{"zero", "0", "upgrade_timeout: must be a positive duration, got 0s"},
		{"negative", "-1s", "upgrade_timeout: must be a positive duration, got -1s"},
		{"huge", "100000h", "upgrade_timeout: must be at most 10m0s, got 100000h0m0s"},
		{"overflow", "9999999999h", `upgrade_timeout: must be a duration such as 250ms or 5s, got "9999999999h"`},
		{"number", "5", `upgrade_timeout: must be a duration such as 250ms or 5s, got "5"`},
		{"without_upgrade", "", "upgrade_timeout: applies only with on_reload: upgrade (on_reload is restart)"},
		{"ok", "10m", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := "source: file://ok.lua\non_reload: upgrade\nupgrade_timeout: " + tc.value
			if tc.value == "" {
				fields = "source: file://ok.lua\nupgrade_timeout: 1s"
			}
			_, errs := h.Decode(tc.name, fields)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("want one error, got %v", errs)
			}
			msg := errs[0].Error()
			if !strings.Contains(msg, "config.yaml:") || !strings.Contains(msg, "test:"+tc.name) || !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q: want the file, the entry and %q", msg, tc.want)
			}
		})
	}
}

// heapAfterGC is the live heap, collected twice so finalizers ran.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A process that re-enters its main in a tight loop (process.upgrade with
// no event pending) holds what one run of main holds: neither the Go
// stack nor the heap grows with the re-entries, and it still stops when
// told.
func TestUpgradeReentryLoopHoldsNothing(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("spin", `
return { main = function(n, stop)
  if n < stop then process.upgrade(n + 1, stop, string.rep("x", 100)) end
  while true do process.inbox():receive():reply(n) end
end }`)
	n := 100_000
	if raceEnabled {
		n = 10_000
	}
	held := func(stop int) (uint64, process.PID) {
		pid := h.Spawn(e, 0, stop)
		if got := ask(t, h, pid, "n", nil); fmt.Sprint(got) != fmt.Sprint(stop) {
			t.Fatalf("re-entered %v times, want %d", got, stop)
		}
		return heapAfterGC(), pid
	}
	base, p1 := held(10)
	gor := runtime.NumGoroutine()
	after, p2 := held(n)
	// Each re-entry makes a fresh Lua state; if anything of the old ones
	// stayed reachable, n of them would show (n × 100 bytes of strings
	// alone is 10 MB).
	if after > base+4<<20 {
		t.Errorf("heap after %d re-entries: %d bytes, after 10: %d: the old states are kept", n, after, base)
	}
	// Goroutines that served the re-entries (an upgrade's, a timer's)
	// wind down after the replies: wait for them, don't count them.
	eventually(t, 10*time.Second, fmt.Sprintf("the goroutines after %d re-entries to come back to %d", n, gor+1), func() bool {
		return runtime.NumGoroutine() <= gor+1
	})
	for _, pid := range []process.PID{p1, p2} {
		_ = h.Node.Terminate(pid)
		h.Wait(pid, 10*time.Second)
	}

	// One that re-enters forever stops when told (between instructions,
	// or at its next process.upgrade).
	forever := h.Entry("forever", `return { main = function(n) process.upgrade((n or 0) + 1) end }`)
	pid := h.Spawn(forever)
	time.Sleep(50 * time.Millisecond) // let it spin
	_ = h.Node.Terminate(pid)
	h.Wait(pid, 10*time.Second)
}

// State that cannot be handed over raises at the process.upgrade call
// (the script fails, naming why); a large one is handed over whole.
func TestUpgradeHostileState(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct{ name, build, want string }{
		{"cycle", `local s = {}; s.self = s`, "cycle: a table contains itself"},
		{"deep", `local s = {}; local t = s; for i = 1, 100 do t.n = {}; t = t.n end`, "nested deeper than"},
		{"shared_blowup", `local s = {1}; for i = 1, 40 do s = {s, s} end`, "would copy into more than 1048576 values"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ex := h.Run(h.Entry(c.name, `return { main = function() `+c.build+`; process.upgrade(s) end }`))
			if ex.Err == nil || !strings.Contains(ex.Err.Error(), c.want) || !strings.Contains(ex.Err.Error(), "process.upgrade: argument 1") {
				t.Fatalf("exit %v, want an error naming process.upgrade's argument and %q", ex.Err, c.want)
			}
		})
	}
	h.Check(h.Entry("large", `
return { main = function(s)
  if not s then
    s = {}
    for i = 1, 500000 do s[i] = i end
    process.upgrade(s)
  end
  assert(#s == 500000 and s[500000] == 500000)
  return "ok"
end }`))
}

// New code whose upgrade function never returns (or whose main never
// waits) has not upgraded: at the upgrade_timeout the offerer hears
// timeout, and restarts it (it can be stopped: the loop checks for it).
func TestUpgradeFunctionNeverReturns(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("hang", `
return { main = function()
  local ev = process.events():receive()
  process.upgrade()
end }`, "on_reload: upgrade", "upgrade_timeout: 200ms")
	for _, c := range []struct{ name, src string }{
		{"upgrade_loops", `return { upgrade = function() while true do end end, main = function() end } -- v2 hang`},
		{"main_loops", `return { main = function() local n = 0; while true do n = n + 1 end end } -- v2 busy`},
	} {
		t.Run(c.name, func(t *testing.T) {
			pid := h.Spawn(e)
			res, err := offer(t, h, pid, redefine(h, "hang", c.src, "on_reload: upgrade", "upgrade_timeout: 200ms"))
			if res != registry.UpgradeTimeout || err == nil || !strings.Contains(err.Error(), "200ms") {
				t.Fatalf("upgrade: %q, %v; want timeout naming 200ms", res, err)
			}
			_ = h.Node.Terminate(pid)
			h.Wait(pid, 10*time.Second)
		})
	}
}

// An upgrade storm: many reloads in a row, each offering new code to many
// processes at once. Every offer is taken, the state goes through every
// version, and nothing is left behind (goleak at the package's end).
func TestUpgradeStorm(t *testing.T) {
	h := newHarness(t)
	procs, rounds := 1000, 50
	if raceEnabled || testing.Short() {
		procs, rounds = 200, 10
	}
	src := func(v int) string {
		return fmt.Sprintf(`
return {
  upgrade = function(n) return n + 1 end,
  main = function(n)
    n = n or 0
    local inbox, events = process.inbox(), process.events()
    while true do
      local r = channel.select{ inbox:case_receive(), events:case_receive() }
      if r.channel == events then
        if r.value.kind == "UPGRADE" then process.upgrade(n) end
      else
        r.value:reply({v = %d, n = n})
      end
    end
  end,
} -- storm v%04d`, v, v)
	}
	e := h.Entry("storm", src(0), "on_reload: upgrade", "upgrade_timeout: 30s")
	pids := make([]process.PID, procs)
	for i := range pids {
		pids[i] = h.Spawn(e)
	}
	gor := runtime.NumGoroutine()
	host := h.Kind.(*Host)
	for v := 1; v <= rounds; v++ {
		e2 := redefine(h, "storm", src(v), "on_reload: upgrade", "upgrade_timeout: 30s")
		var wg sync.WaitGroup
		var mu sync.Mutex
		bad := map[registry.UpgradeResult]int{}
		for _, pid := range pids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res, _ := host.Upgrade(context.Background(), h.Env, pid, e2); res != registry.UpgradeOK {
					mu.Lock()
					bad[res]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(bad) > 0 {
			t.Fatalf("round %d: upgrades not ok: %v", v, bad)
		}
	}
	for _, pid := range pids {
		got := ask(t, h, pid, "get", nil).(map[string]any)
		if fmt.Sprint(got["v"]) != fmt.Sprint(rounds) || fmt.Sprint(got["n"]) != fmt.Sprint(rounds) {
			t.Fatalf("%s after %d upgrades: %v", pid, rounds, got)
		}
	}
	// The Upgrade calls' goroutines and the processes' wake-ups wind down
	// after the last reply (under load that takes a moment): wait for
	// them, don't count them.
	eventually(t, 10*time.Second, fmt.Sprintf("the goroutines after the storm to come back to %d", gor+10), func() bool {
		return runtime.NumGoroutine() <= gor+10
	})
}

// An upgrade function that waits for ever, or yields: only the new main's
// first wait settles an upgrade, so one whose upgrade function waits past
// the upgrade_timeout has not upgraded (timeout: it is restarted) and
// stays stoppable; a yield outside a coroutine raises: failed.
func TestUpgradeFunctionWaitsOrYields(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("waity", `
return { main = function()
  local ev = process.events():receive()
  process.upgrade()
end }`, "on_reload: upgrade", "upgrade_timeout: 300ms")
	for _, c := range []struct {
		name, src string
		want      registry.UpgradeResult
	}{
		{"sleeps", `return { upgrade = function() time.sleep(1e12) end, main = function() end } -- v2 sleep`, registry.UpgradeTimeout},
		{"receives", `return { upgrade = function() process.inbox():receive() end, main = function() end } -- v2 recv`, registry.UpgradeTimeout},
		{"waits_then_main", `return { upgrade = function() time.sleep(1); process.inbox():receive() ; return 1 end, main = function(n) process.inbox():receive() end } -- v2 ok`, registry.UpgradeOK},
		{"yields", `return { upgrade = function() coroutine.yield() end, main = function() end } -- v2 yield`, registry.UpgradeFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			pid := h.Spawn(e)
			if c.name == "waits_then_main" {
				// Read by the upgrade function: a wait that ends.
				_ = h.Node.Send(pid, process.Message{Topic: "go"})
			}
			res, err := offer(t, h, pid, redefine(h, "waity", c.src, "on_reload: upgrade", "upgrade_timeout: 300ms"))
			if res != c.want {
				t.Fatalf("upgrade: %q, %v; want %q", res, err, c.want)
			}
			_ = h.Node.Terminate(pid)
			h.Wait(pid, 10*time.Second)
		})
	}
}

// Asks the old code received and held unanswered when it upgraded are
// rejected at once (stopped), not left to their askers' timeouts; asks
// still in the mailbox are answered by the new code.
func TestUpgradeRejectsHeldAsks(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("holder", `
return { main = function()
  local inbox, events = process.inbox(), process.events()
  local held = {}
  while true do
    local r = channel.select{ inbox:case_receive(), events:case_receive() }
    if r.channel == events then process.upgrade(#held) end
    held[#held + 1] = r.value -- never answered
    if #held == 3 then assert(process.register("holding3")); events:receive(); process.upgrade(#held) end
  end
end }`, "on_reload: upgrade")
	pid := h.Spawn(e)
	type answer struct {
		v   any
		err error
		d   time.Duration
	}
	answers := make(chan answer, 4)
	for i := 0; i < 3; i++ {
		go func() {
			start := time.Now()
			v, _, err := h.Node.Ask(pid, process.Message{Topic: "held"}, 30*time.Second)
			answers <- answer{v, err, time.Since(start)}
		}()
	}
	// Let the three be received and held before the offer.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := h.Node.Whereis("holding3"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the asks were not received")
		}
		time.Sleep(time.Millisecond)
	}
	res, err := offer(t, h, pid, redefine(h, "holder", `
return { main = function(n) while true do process.inbox():receive():reply(n) end end } -- v2 held`, "on_reload: upgrade"))
	if res != registry.UpgradeOK {
		t.Fatalf("upgrade: %q, %v", res, err)
	}
	for i := 0; i < 3; i++ {
		a := <-answers
		if a.err == nil || !strings.Contains(a.err.Error(), "upgraded its code before it answered") || a.d > 10*time.Second {
			t.Errorf("held ask: %v, %v after %s; want stopped at once", a.v, a.err, a.d)
		}
	}
	if got := ask(t, h, pid, "n", nil); fmt.Sprint(got) != "3" {
		t.Errorf("the new code: %v, want 3", got)
	}
}
