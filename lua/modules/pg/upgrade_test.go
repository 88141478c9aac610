package pg_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// pg memberships survive a hot upgrade: they belong to the process, not to
// its Lua state, so the new code finds itself in the groups the old code
// joined (as often as it joined), and no member.left is sent. The old
// code's subscriptions, whose handles the new code cannot reach, close.
func TestLuaPGMembershipsSurviveUpgrade(t *testing.T) {
	h, _ := pgHarness(t, nil)
	e := h.Entry("member", `
local pg = require("pg")
return { main = function()
  local scope = assert(pg.open("pg"))
  assert(scope:join({"g", "g", "other"}))
  local sub = scope:monitor("g") -- the old state's: closed at the upgrade
  local ev = process.events():receive()
  assert(ev.kind == "UPGRADE")
  process.upgrade()
end }`, "on_reload: upgrade")
	watcher := h.Entry("watcher", `
local pg = require("pg")
return { main = function()
  local scope = assert(pg.open("pg"))
  local sub, members = scope:monitor("g")
  local inbox = process.inbox()
  local left = 0
  while true do
    local r = channel.select{ sub:channel():case_receive(), inbox:case_receive() }
    if r.channel == inbox then
      r.value:reply(left)
    elseif r.value.kind == "member.left" then
      left = left + 1
    end
  end
end }`)
	wpid := h.Spawn(watcher)
	pid := h.Spawn(e)
	e2 := h.Entry("member", `
local pg = require("pg")
return { main = function()
  local scope = assert(pg.open("pg"))
  local self, mine = process.pid(), 0
  for _, m in ipairs(scope:get_local_members("g")) do
    if m == self then mine = mine + 1 end
  end
  local groups = scope:which_local_groups()
  local inbox = process.inbox()
  while true do inbox:receive():reply({mine = mine, groups = #groups}) end
end } -- v2`, "on_reload: upgrade")
	e2.Digest = "v2"
	// The watcher must have its subscription before the upgrade.
	eventually(t, 5*time.Second, "the member joined", func() bool {
		v, _, err := h.Node.Ask(wpid, process.Message{Topic: "left"}, time.Second)
		return err == nil && v != nil
	})
	eventually(t, 5*time.Second, "both subscriptions", func() bool { return subscribers(t, h) == 2 })
	res, err := h.Kind.(*lua.Host).Upgrade(context.Background(), h.Env, pid, e2)
	if res != registry.UpgradeOK {
		t.Fatalf("upgrade: %q, %v", res, err)
	}
	v, _, err := h.Node.Ask(pid, process.Message{Topic: "get"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := v.(map[string]any)
	if fmt.Sprint(got["mine"]) != "2" || fmt.Sprint(got["groups"]) != "2" {
		t.Errorf("after the upgrade: %v; want twice in g, and two groups", got)
	}
	// The old code's subscription closes as its state goes; the scope
	// forgets it on its own loop (Subscription.Close is a command to it).
	eventually(t, 5*time.Second, "one subscription after the upgrade (the old code's closed)", func() bool { return subscribers(t, h) == 1 })
	if left, _, err := h.Node.Ask(wpid, process.Message{Topic: "left"}, 5*time.Second); err != nil || fmt.Sprint(left) != "0" {
		t.Errorf("member.left events seen by a monitor: %v, %v; want none", left, err)
	}
}
