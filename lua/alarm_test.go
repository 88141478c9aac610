package lua

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// A suspended wait with a deadline is woken by the process's one alarm
// timer, which is set only when a wait suspends and left set when a wait
// ends (suspend.go, alarmTimer). Each case first leaves the timer set for
// another deadline, by an ask answered at once, then waits for good on a
// process that never answers or in a sleep: the wait must end at its own
// deadline, neither before it nor never (the harness's 30 s deadline).
func TestAlarmServesEveryDeadline(t *testing.T) {
	cases := []struct {
		name string
		// the wait after an answered ask of timeout first; it returns
		// what main returns, with the wait's own timeout in ms
		first, wait string
		minMS       float64
		want        string
	}{
		// The timer fires first, for the answered ask: the process looks
		// again and sets it for its own deadline.
		{"an earlier deadline left set", "300", `process.ask(silent, "q", 1, 1200)`, 1200, "timeout"},
		// The timer is set for a later deadline: the ask sets it earlier.
		{"a later deadline left set", `"1h"`, `process.ask(silent, "q", 1, 200)`, 200, "timeout"},
		{"a sleep after a later deadline", `"1h"`, `time.sleep(200)`, 200, "true"},
		{"a sleep after an earlier deadline", "100", `time.sleep(600)`, 600, "true"},
		// Woken early by the timer, the ask still gets its reply.
		{"a reply after an earlier deadline fired", "100", `process.ask(slow, "q", 1, "1m")`, 500, "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			echo := h.Spawn(h.Entry("echo", `return { main = function()
  local inbox = process.inbox()
  while true do local m = inbox:receive(); m:reply(m:payload()) end
end }`))
			// silent holds the asks it receives and never answers.
			silent := h.Spawn(h.Entry("silent", `return { main = function()
  local held, inbox = {}, process.inbox()
  while true do held[#held + 1] = inbox:receive() end
end }`))
			slow := h.Spawn(h.Entry("slow", `return { main = function()
  local inbox = process.inbox()
  while true do local m = inbox:receive(); time.sleep(500); m:reply(m:payload()) end
end }`))
			e := h.Entry("waiter", `return { main = function(echo, silent, slow)
  local v, err = process.ask(echo, "q", 7, `+tc.first+`)
  if v ~= 7 then error("echo: " .. tostring(err)) end
  local t0 = time.now()
  local r, werr = `+tc.wait+`
  return string.format("%s %s|%d", tostring(r), tostring(werr), time.now() - t0)
end }`)
			pid := h.Spawn(e, echo.String(), silent.String(), slow.String())
			ex := h.Wait(pid, 30*time.Second)
			if ex.Err != nil {
				t.Fatal(ex.Err)
			}
			out, _ := ex.Value.(string)
			got, msText, ok := strings.Cut(out, "|")
			ms, err := strconv.ParseFloat(msText, 64)
			if !ok || err != nil {
				t.Fatalf("exit value %#v", ex.Value)
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("the wait returned %q; want %q in it", got, tc.want)
			}
			if ms < tc.minMS-1 { // time.now is in whole ms
				t.Fatalf("the wait ended after %v ms, before its %v ms", ms, tc.minMS)
			}
		})
	}
}
