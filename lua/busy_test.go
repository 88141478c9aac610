package lua

import (
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// A script that sleeps or asks in the middle of handling a message is
// suspended, but it is not idle: a router must not take it for a routee
// that has finished what it accepted and retire it (it did, under load:
// the message being handled was lost). One waiting for mail is idle.
func TestSuspendedMidWorkIsNotIdle(t *testing.T) {
	for _, tc := range []struct{ name, wait string }{
		{"sleep", `time.sleep(60000)`},
		{"ask", `process.ask(silent, "never answered", nil, 60000)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			e := h.Entry("worker", `
local probe = require("benchprobe")
return { main = function(silent)
  local inbox = process.listen("work")
  while true do
    inbox:receive()
    probe.ready()
    `+tc.wait+`
  end
end }`)
			// A process that takes asks and never answers them.
			silent, err := h.Node.SpawnFunc(func(p *process.Proc) (any, error) {
				<-p.Context().Done()
				return nil, nil
			}, process.SpawnOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Node.Kill(silent)
			probeReady.Store(0)
			pid := h.Spawn(e, silent.String())
			eventually(t, 10*time.Second, "the script to wait for mail", func() bool { return h.Node.Idle(pid) })
			if err := h.Node.Send(pid, process.Message{Topic: "work"}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "the work to start", func() bool { return probeReady.Load() == 1 })
			// It suspends in its wait at once; it must not look idle for
			// as long as it waits.
			for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				if h.Node.Idle(pid) {
					t.Fatalf("idle while in %s in the middle of its work", tc.name)
				}
			}
			h.Node.Kill(pid)
		})
	}
}
