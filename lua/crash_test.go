package lua

import (
	"strings"
	"testing"
	"time"
)

// A spawned process that raises is reported at error level with its
// entry, its PID, the error and the traceback; one that returns or is
// terminated is not.
func TestCrashReports(t *testing.T) {
	h := newHarness(t)
	h.Entry("crasher", `
local function deep() error("went wrong") end
return { main = function() deep() end }`)
	h.Entry("quiet", `return { main = function(mode) if mode == "wait" then time.sleep(100000) end return "fine" end }`)
	h.Check(h.Entry("main", `
return { main = function()
  local ev = process.events()
  assert(process.spawn_monitored("crasher"))
  ev:receive()
  assert(process.spawn_monitored("quiet"))
  ev:receive()
  local w = assert(process.spawn_monitored("quiet", "wait"))
  process.terminate(w)
  ev:receive()
  return "ok"
end }`))
	logs := h.Logs.String()
	var report string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "process crashed") {
			if report != "" {
				t.Fatalf("more than one crash report:\n%s", logs)
			}
			report = line
		}
	}
	for _, want := range []string{"level=ERROR", "entry=test:crasher", "pid=<test.", `error="internal: `, "crasher.lua:2: went wrong", "traceback=", "in function 'deep'"} {
		if !strings.Contains(report, want) {
			t.Fatalf("the crash report lacks %s:\n%s", want, logs)
		}
	}
}

// A crash loop cannot flood the log: past the burst, reports are counted,
// and their number logged at the window's end.
func TestCrashReportsAreRateLimited(t *testing.T) {
	h := newHarnessWith(t, Options{CrashReports: CrashReportLimit{Burst: 2, Window: 2 * time.Second}})
	h.Entry("crasher", `return { main = function() error("again") end }`)
	h.Check(h.Entry("main", `
return { main = function()
  local ev = process.events()
  for i = 1, 7 do
    assert(process.spawn_monitored("crasher"))
    ev:receive()
  end
  return "ok"
end }`))
	eventually(t, 20*time.Second, "the suppressed count logged", func() bool {
		return strings.Contains(h.Logs.String(), "crash reports suppressed")
	})
	logs := h.Logs.String()
	if n := strings.Count(logs, "process crashed"); n != 2 {
		t.Fatalf("%d crash reports, want 2:\n%s", n, logs)
	}
	if !strings.Contains(logs, "entry=test:crasher suppressed=5 logged=2 window=2s") {
		t.Fatalf("no line with the suppressed count:\n%s", logs)
	}
}

// A killed process did not crash, whatever its cancelled script raised.
func TestKilledProcessIsNoCrash(t *testing.T) {
	h := newHarness(t)
	ended := make(chan struct{})
	hooks := []func(){func() { close(ended) }}
	exitHookHooks.Store(&hooks)
	h.Entry("sleeper", `require("exithook_test").install()
return { main = function() process.register("sleeper"); process.inbox():receive() end }`)
	pid := h.Spawn(h.Known("test:sleeper"))
	eventually(t, 5*time.Second, "the sleeper to wait", func() bool {
		_, named := h.Node.Whereis("sleeper")
		return named && h.Node.Idle(pid)
	})
	if err := h.Node.Kill(pid); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended: // the exit hooks run after the crash report would have
	case <-time.After(10 * time.Second):
		t.Fatal("the killed script never ended")
	}
	if logs := h.Logs.String(); strings.Contains(logs, "process crashed") {
		t.Fatalf("a killed process was reported as a crash:\n%s", logs)
	}
}
