package pg_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
)

// A script holds at most pgscope.MaxSubscriptionsPerProcess subscriptions
// of a scope (a script that opened 100,000 and read none made each change
// of its group cost seconds of the scope's loop and gigabytes): one more
// is nil, err with kind limit.
func TestLuaSubscriptionsBounded(t *testing.T) {
	h, _ := pgHarness(t, nil)
	h.Check(h.Entry("main", fmt.Sprintf(`
local pg = require("pg")
return { main = function()
  local scope = assert(pg.open("pg"))
  local subs = {}
  for i = 1, %d do subs[i] = assert(scope:monitor("hot")) end
  local sub, err = scope:monitor("hot")
  assert(sub == nil and err.kind == "limit", tostring(err))
  local all, err2 = scope:events()
  assert(all == nil and err2.kind == "limit", tostring(err2))
  subs[1]:close()
  assert(scope:monitor("hot"))
  return "ok"
end }`, pgscope.MaxSubscriptionsPerProcess)))
}

// BenchmarkJoinLeaveBesideUnreadSubscriptions: a join and a leave of a Go
// process, on the group that scripts holding 10,000 unread subscriptions
// monitor (hot), on another (cold), and on another while a second process
// joins and leaves hot without pause (cold-beside-hot: what one group's
// subscribers cost every other group). Every change of hot is offered to
// every subscriber, each with a full buffer.
func BenchmarkJoinLeaveBesideUnreadSubscriptions(b *testing.B) {
	h, s := pgHarness(b, nil)
	const holders, each = 10, 1000
	e := h.Entry("holder", fmt.Sprintf(`
local pg = require("pg")
return { main = function()
  local scope = assert(pg.open("pg"))
  local subs = {}
  for i = 1, %d do subs[i] = assert(scope:monitor("hot")) end
  process.register("holder." .. process.pid())
  process.inbox():receive()
end }`, each))
	pids := make([]process.PID, holders)
	for i := range pids {
		pids[i] = h.Spawn(e)
	}
	eventually(b, 2*time.Minute, "every holder subscribed", func() bool {
		for _, p := range pids {
			if _, ok := h.Node.Whereis("holder." + p.String()); !ok {
				return false
			}
		}
		return true
	})
	pid, _ := h.Node.SpawnFunc(func(p *process.Proc) (any, error) { <-p.Context().Done(); return nil, nil }, process.SpawnOptions{})
	defer h.Node.Kill(pid)
	joinLeave := func(b *testing.B, pid process.PID, g string) {
		if err := s.Join(pid, g); err != nil {
			b.Fatal(err)
		}
		if err := s.Leave(pid, g); err != nil {
			b.Fatal(err)
		}
	}
	for _, g := range []string{"hot", "cold"} {
		b.Run(g, func(b *testing.B) {
			for b.Loop() {
				joinLeave(b, pid, g)
			}
		})
	}
	b.Run("cold-beside-hot", func(b *testing.B) {
		other, _ := h.Node.SpawnFunc(func(p *process.Proc) (any, error) { <-p.Context().Done(); return nil, nil }, process.SpawnOptions{})
		defer h.Node.Kill(other)
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = s.Join(other, "hot")
				_ = s.Leave(other, "hot")
			}
		}()
		for b.Loop() {
			joinLeave(b, pid, "cold")
		}
		close(stop)
		<-done
	})
}
