package lua

import (
	"testing"

	"github.com/proctor-run/proctor/process"
)

// TestScriptCannotStopRuntimeProcesses: process.terminate of a process of
// the runtime (here a stand-in spawned as System, as supervisors, scopes,
// pools and the root are) is an invalid error the script sees, and the
// process runs on; a crash of a script linked to it does not stop it
// either. Ordinary processes still terminate.
func TestScriptCannotStopRuntimeProcesses(t *testing.T) {
	h := newHarness(t)
	sys, err := h.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		<-p.Context().Done()
		return nil, nil
	}, process.SpawnOptions{System: true, Name: "sys"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Node.Kill(sys)
	h.Entry("echo", `return { main = function() process.inbox():receive() end }`)
	h.Entry("linker", `return { main = function(target)
  assert(process.link(target))
  error("crash while linked")
end }`)
	e := h.Entry("attacker", `return { main = function(target)
  local ok, err = process.terminate(target)
  assert(ok == nil and err.kind == "invalid", "terminate: " .. tostring(err))
  assert(err.message:find("belongs to the runtime"), err.message)
  ok, err = process.terminate("sys")
  assert(ok == nil and err.kind == "invalid", "terminate by name: " .. tostring(err))

  local events = process.events()
  local linker = assert(process.spawn_monitored("linker", target))
  local ev = events:receive()
  assert(ev.kind == "EXIT" and ev.from == linker, "linker exit")

  local echo = assert(process.spawn_monitored("echo"))
  assert(process.terminate(echo))
  ev = events:receive()
  assert(ev.kind == "EXIT" and ev.from == echo and ev.result.error.kind == "stopped", "echo exit")
  return "ok"
end }`)
	h.Check(e, sys.String())
	if !h.Node.Alive(sys) {
		t.Fatal("the system process was stopped by a script")
	}
}

// TestRegisterRefusesEntryNames: names shaped like entry IDs belong to the
// runtime; a script that took "app:svc" would receive the asks meant for
// that entry's service while it restarts.
func TestRegisterRefusesEntryNames(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("squatter", `return { main = function()
  for _, name in ipairs({"app:svc", "test:squatter", ":x", "a:"}) do
    local ok, err = process.register(name)
    assert(ok == nil and err.kind == "invalid", name .. ": " .. tostring(err))
    assert(err.message:find("reserved for entries"), err.message)
  end
  assert(process.register("svc"))
  assert(process.lookup("svc") == process.pid())
  return "ok"
end }`)
	h.Check(e)
	if _, ok := h.Node.Whereis("app:svc"); ok {
		t.Fatal("a script holds an entry's name")
	}
	// The runtime's own path still registers entry IDs.
	pid := h.Spawn(h.Entry("svc", `return { main = function() process.inbox():receive() end }`))
	if err := h.Node.Register("app:svc", pid); err != nil {
		t.Fatalf("the runtime registers an entry name: %v", err)
	}
}
