package lua

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/remote"
)

// offer asks the host to upgrade pid to e, as the runtime does for an
// entry, a supervisor for a child.
func offer(t *testing.T, h *harness, pid process.PID, e *registry.Entry) (registry.UpgradeResult, error) {
	t.Helper()
	return h.Kind.(*Host).Upgrade(context.Background(), h.Env, pid, e)
}

// redefine decodes name again with new source src (a reload's new
// definition), with a digest of its own.
func redefine(h *harness, name, src string, extra ...string) *registry.Entry {
	e := h.Entry(name, src, extra...)
	e.Digest = name + "-" + src[len(src)-8:]
	return e
}

func ask(t *testing.T, h *harness, pid process.PID, topic string, payload any) any {
	t.Helper()
	v, _, err := h.Node.Ask(pid, process.Message{Topic: topic, Payload: payload}, 10*time.Second)
	if err != nil {
		t.Fatalf("ask %s: %v", topic, err)
	}
	return v
}

// The headline: a process with 1,000 unread messages upgrades, keeps its
// PID and registered name, and reads every message on the new code, in
// order, with the state the old code handed over.
func TestUpgradeKeepsPIDNameAndMailbox(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("counter", `
return { main = function()
  assert(process.register("counter"))
  local ev = process.events():receive() -- the inbox is left unread
  assert(ev.kind == "UPGRADE" and ev.version == "counter-ADE v2", tostring(ev.version))
  process.upgrade({seen = 41}, "from v1")
  error("process.upgrade returned")
end }`, "on_reload: upgrade")
	pid := h.Spawn(e)
	done, _, _ := h.Node.Done(pid)
	for i := 1; i <= 1000; i++ {
		if err := h.Node.Send(pid, process.Message{Topic: "n", Payload: i}); err != nil {
			t.Fatal(err)
		}
	}
	e2 := redefine(h, "counter", `
return {
  upgrade = function(state, note)
    assert(note == "from v1")
    return state.seen + 1
  end,
  main = function(seen)
    local inbox = process.inbox()
    for i = 1, 1000 do
      local m = inbox:receive()
      assert(m:topic() == "n" and m:payload() == i, "message " .. i .. " out of order")
    end
    while true do
      local m = inbox:receive()
      m:reply({seen = seen, name = process.lookup("counter"), pid = process.pid()})
    end
  end,
} -- UPGRADE v2`, "on_reload: upgrade")
	e2.Digest = "counter-ADE v2"
	res, err := offer(t, h, pid, e2)
	if res != registry.UpgradeOK || err != nil {
		t.Fatalf("upgrade: %q, %v", res, err)
	}
	got := ask(t, h, pid, "get", nil).(map[string]any)
	if got["seen"] != int64(42) && got["seen"] != float64(42) {
		t.Errorf("seen = %v, want 42 (the old code's state, through upgrade)", got["seen"])
	}
	if got["name"] != pid.String() || got["pid"] != pid.String() {
		t.Errorf("after the upgrade: name -> %v, pid %v; want both %s", got["name"], got["pid"], pid)
	}
	select {
	case <-done:
		t.Fatal("the process exited")
	default:
	}
}

// Without an UPGRADE event, process.upgrade re-enters the current code's
// main with the values (no upgrade function: that is for a new version).
func TestUpgradeWithoutEventReentersMain(t *testing.T) {
	h := newHarness(t)
	h.Check(h.Entry("loop", `
return {
  upgrade = function() error("not for a re-entry") end,
  main = function(n)
    n = n or 0
    if n < 3 then process.upgrade(n + 1) end
    assert(n == 3)
    return "ok"
  end,
}`))
}

func TestUpgradeMisuseRaises(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct{ name, src, want string }{
		{"under_pcall", `return { main = function() return pcall(process.upgrade) end }`, "not under pcall"},
		{"in_coroutine", `return { main = function() return coroutine.wrap(function() process.upgrade() end)() end }`, "not under pcall"},
		{"function_value", `return { main = function() process.upgrade(function() end) end }`, "argument 1"},
		{"channel_value", `return { main = function() process.upgrade({ch = channel.new()}) end }`, "argument 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ex := h.Run(h.Entry(c.name, c.src))
			if c.name == "under_pcall" {
				// pcall catches the raise: false and the message.
				if ex.Err != nil {
					t.Fatalf("exit %v", ex.Err)
				}
				return
			}
			if ex.Err == nil || !strings.Contains(ex.Err.Error(), c.want) {
				t.Fatalf("exit %v, want an error with %q", ex.Err, c.want)
			}
		})
	}
	// The message of the raise under pcall names the rule.
	h.Check(h.Entry("pcall_msg", `
return { main = function()
  local ok, err = pcall(process.upgrade)
  assert(not ok and tostring(err):find("not under pcall", 1, true), tostring(err))
  return "ok"
end }`))
}

// A process that never calls process.upgrade is left on its old code at
// the timeout (its caller restarts it), and the offer is withdrawn: a
// later process.upgrade re-enters the old code.
func TestUpgradeTimeout(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("stubborn", `
return { main = function(v)
  v = v or "v1"
  while true do
    local m = process.inbox():receive()
    if m:topic() == "again" then process.upgrade("v1 again") end
    m:reply(v)
  end
end }`, "on_reload: upgrade", "upgrade_timeout: 100ms")
	pid := h.Spawn(e)
	e2 := redefine(h, "stubborn", `return { main = function() while true do process.inbox():receive():reply("v2") end end } -- v2`,
		"on_reload: upgrade", "upgrade_timeout: 100ms")
	start := time.Now()
	res, err := offer(t, h, pid, e2)
	if res != registry.UpgradeTimeout || err == nil || !strings.Contains(err.Error(), "100ms") {
		t.Fatalf("upgrade: %q, %v; want a timeout naming 100ms", res, err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("timed out after %s, before the upgrade_timeout", d)
	}
	if got := ask(t, h, pid, "get", nil); got != "v1" {
		t.Fatalf("after the timeout: %v, want v1", got)
	}
	_ = h.Node.Send(pid, process.Message{Topic: "again"})
	if got := ask(t, h, pid, "get", nil); got != "v1 again" {
		t.Fatalf("after a withdrawn offer, process.upgrade re-enters the old code: %v", got)
	}
}

// New code that raises in its upgrade, or in main before its first wait,
// is a failed upgrade: the process has crashed with the error.
func TestUpgradeNewCodeRaises(t *testing.T) {
	for _, c := range []struct{ name, v2, want string }{
		{"upgrade_raises", `return { upgrade = function(s) error("cannot migrate " .. s) end, main = function() end }`, "cannot migrate state"},
		{"main_raises", `return { main = function(s) error("main broke on " .. s) end }`, "main broke on state"},
		{"syntax_at_run", `return { main = 5 }`, "not a function"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			e := h.Entry("w", `
return { main = function()
  process.events():receive()
  process.upgrade("state")
end }`, "on_reload: upgrade")
			pid := h.Spawn(e)
			e2 := redefine(h, "w", c.v2+" -- v2 "+c.name, "on_reload: upgrade")
			res, err := offer(t, h, pid, e2)
			if res != registry.UpgradeFailed || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("upgrade: %q, %v; want failed with %q", res, err, c.want)
			}
			if ex := h.Wait(pid, 10*time.Second); ex.Err == nil || !strings.Contains(ex.Err.Error(), c.want) {
				t.Fatalf("exit %v, want the new code's error", ex.Err)
			}
		})
	}
}

// A process that is not upgradable (on_reload is not upgrade and its
// spawner did not ask) is not offered anything: its caller restarts it.
func TestUpgradeNotUpgradable(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("plain", `return { main = function() process.inbox():receive() end }`)
	pid := h.Spawn(e)
	res, err := offer(t, h, pid, redefine(h, "plain", `return { main = function() end } -- v2`))
	if res != registry.UpgradeNone || err != nil {
		t.Fatalf("upgrade: %q, %v; want none", res, err)
	}
}

// An upgrade during a burst of asks loses none: each is answered by the
// old code or the new one, none times out, and every answer after the
// first from the new code is the new code's.
func TestUpgradeDuringAskBurst(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("svc", `
return { main = function()
  local inbox, events = process.inbox(), process.events()
  while true do
    local r = channel.select{ inbox:case_receive(), events:case_receive() }
    if r.channel == events then process.upgrade() end
    r.value:reply("v1")
  end
end }`, "on_reload: upgrade")
	pid := h.Spawn(e)
	e2 := redefine(h, "svc", `
return { main = function()
  while true do process.inbox():receive():reply("v2") end
end } -- v2`, "on_reload: upgrade")
	const clients, after = 4, 50
	var wg, answered sync.WaitGroup
	errs := make(chan string, clients*after)
	answered.Add(clients)
	deadline := time.Now().Add(20 * time.Second)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first, v2 := true, 0
			// Until 50 answers of the new code, or the deadline.
			for v2 < after && time.Now().Before(deadline) {
				v, _, err := h.Node.Ask(pid, process.Message{Topic: "q"}, 10*time.Second)
				switch {
				case err != nil:
					errs <- err.Error()
				case v == "v2":
					v2++
				case v2 > 0:
					errs <- "v1 answered after v2"
				}
				if first {
					first = false
					answered.Done()
				}
			}
			if v2 < after {
				errs <- "the new code did not answer"
			}
		}()
	}
	answered.Wait() // the burst is under way: the upgrade lands in its middle
	if res, err := offer(t, h, pid, e2); res != registry.UpgradeOK {
		t.Fatalf("upgrade: %q, %v", res, err)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// upgradeLookup is the harness's lookup with the runtime's Upgrade, so
// that UpgradeSpawned reaches the host as a runtime would.
type upgradeLookup struct {
	registry.Lookup
	h   *Host
	env *registry.Env
}

func (l upgradeLookup) Upgrade(ctx context.Context, pid process.PID, id registry.ID) (registry.UpgradeResult, error) {
	e, _ := l.Entry(id)
	return l.h.Upgrade(ctx, l.env, pid, e)
}

// A process a script spawned with process.with_options{on_reload =
// "upgrade"} is offered its entry's new code after a reload (no
// supervisor does it); one spawned without it is left on its old code.
func TestUpgradeSpawnedProcesses(t *testing.T) {
	h := newHarness(t)
	host := h.Kind.(*Host)
	h.Env.Entries = upgradeLookup{Lookup: h.Look, h: host, env: h.Env}
	src := upgradingServer
	redefine(h, "w", src("v1"))
	spawner := h.Entry("spawner", `return { main = function()
  local a = assert(process.with_options{on_reload = "upgrade"}:spawn("w"))
  local b = assert(process.spawn("w"))
  return {a, b}
end }`)
	ex := h.Run(spawner)
	if ex.Err != nil {
		t.Fatal(ex.Err)
	}
	pids := ex.Value.([]any)
	up, plain := parsePID(t, pids[0]), parsePID(t, pids[1])
	h.Track(up)
	h.Track(plain)
	redefine(h, "w", src("v2"))
	host.UpgradeSpawned(context.Background(), h.Env)
	if got := ask(t, h, up, "q", nil); got != "v2" {
		t.Errorf("the upgradable spawned process answers %v, want v2", got)
	}
	if got := ask(t, h, plain, "q", nil); got != "v1" {
		t.Errorf("the other one answers %v, want v1 (its old code)", got)
	}
	// Nothing changed since: nothing is offered again.
	host.UpgradeSpawned(context.Background(), h.Env)
	if got := ask(t, h, up, "q", nil); got != "v2" {
		t.Errorf("after a second pass: %v", got)
	}
}

func parsePID(t *testing.T, v any) process.PID {
	t.Helper()
	s, _ := v.(string)
	pid, err := process.ParsePID(s)
	if err != nil {
		t.Fatalf("pid %v: %v", v, err)
	}
	return pid
}

// Another process's monitor does not fire and its link does not break:
// the PID never exits.
func TestUpgradeKeepsMonitorsAndLinks(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("target", `
return { main = function()
  process.events():receive()
  process.upgrade()
end }`, "on_reload: upgrade")
	pid := h.Spawn(e)
	watcher := h.Entry("watcher", `
return { main = function(target)
  process.set_options{trap_links = true}
  assert(process.monitor(target))
  assert(process.link(target))
  local inbox, events = process.inbox(), process.events()
  local seen = 0
  while true do
    local r = channel.select{ inbox:case_receive(), events:case_receive() }
    if r.channel == events then seen = seen + 1 else r.value:reply(seen) end
  end
end }`)
	wpid := h.Spawn(watcher, pid.String())
	if got := ask(t, h, wpid, "seen", nil); got != int64(0) && got != float64(0) {
		t.Fatalf("events before the upgrade: %v", got)
	}
	e2 := redefine(h, "target", `return { main = function() while true do process.inbox():receive():reply("v2") end end } -- v2`, "on_reload: upgrade")
	if res, err := offer(t, h, pid, e2); res != registry.UpgradeOK {
		t.Fatalf("upgrade: %q, %v", res, err)
	}
	if got := ask(t, h, pid, "q", nil); got != "v2" {
		t.Fatalf("target answers %v", got)
	}
	if got := ask(t, h, wpid, "seen", nil); got != int64(0) && got != float64(0) {
		t.Errorf("the watcher saw %v EXIT/LINK_DOWN events across the upgrade; want none", got)
	}
	// The monitor still works: the target's exit is seen.
	_ = h.Node.Terminate(pid)
	eventually(t, 10*time.Second, "the monitor and the link to fire at the exit", func() bool {
		v, _, err := h.Node.Ask(wpid, process.Message{Topic: "seen"}, time.Second)
		return err == nil && (v == int64(2) || v == float64(2))
	})
}

// Across nodes nothing special: a PID another node holds keeps reaching
// the process after it upgraded, because it never changed.
func TestUpgradeRemotePIDStillReaches(t *testing.T) {
	h := newHarness(t)
	other := otherNode(t, h, remote.MemOptions{})
	src := upgradingServer
	pid := h.Spawn(redefine(h, "svc", src("v1"), "on_reload: upgrade"))
	askFrom := func() any {
		t.Helper()
		v, _, err := other.Ask(pid, process.Message{Topic: "q"}, 10*time.Second)
		if err != nil {
			t.Fatalf("ask from the other node: %v", err)
		}
		return v
	}
	if got := askFrom(); got != "v1" {
		t.Fatalf("before: %v", got)
	}
	if res, err := offer(t, h, pid, redefine(h, "svc", src("v2"), "on_reload: upgrade")); res != registry.UpgradeOK {
		t.Fatalf("upgrade: %q, %v", res, err)
	}
	if got := askFrom(); got != "v2" {
		t.Fatalf("after: %v, want the new code's answer through the same PID", got)
	}
}

// upgradingServer answers asks with code and upgrades when offered.
func upgradingServer(code string) string {
	return `return { main = function()
  local inbox, events = process.inbox(), process.events()
  while true do
    local r = channel.select{ inbox:case_receive(), events:case_receive() }
    if r.channel == events then process.upgrade() else r.value:reply("` + code + `") end
  end
end } -- ` + code
}
