package cluster

import (
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/faultnet"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

// A node restarted under its name (on its addresses, as a service
// restarts) is reached by the first ask made once the membership sees it
// back: the old incarnation's connection does not fail it.
func TestFirstAskAfterRestartSucceeds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name                    string
		crash, noSecret, zombie bool
		survivor, restarts      string
	}{
		// The old incarnation vanished without its connections closing
		// (its machine went away): only its new metadata tells.
		{"zombie connection", true, false, true, "n1", "n2"},
		{"zombie connection, the restarted node dials", true, false, true, "n2", "n1"},
		{"graceful", false, false, false, "n1", "n2"},
		{"crash", true, false, false, "n1", "n2"},
		{"graceful, the restarted node dials", false, false, false, "n2", "n1"},
		{"crash, the restarted node dials", true, false, false, "n2", "n1"},
		{"graceful, no secret", false, true, false, "n1", "n2"},
		{"crash, no secret, the restarted node dials", true, true, false, "n2", "n1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tc := &tcluster{t: t, faults: faultnet.New(), secret: testSecret, nodes: map[string]*tnode{}}
			if tt.noSecret {
				tc.secret = nil
			}
			t.Cleanup(tc.close)
			tc.start(tt.survivor)
			tc.start(tt.restarts)
			tc.converged(20 * time.Second)
			old := tc.node(tt.restarts)
			spawnEcho := func(n *process.Node) process.PID {
				pid, err := n.Spawn(echo, process.SpawnOptions{Name: "echo"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = n.Kill(pid) })
				return pid
			}
			oldEcho := spawnEcho(old.node)
			ask := func() (process.PID, error) {
				call := process.NewCall()
				if err := tc.node(tt.survivor).node.SendName(tt.restarts, "echo", call.MessageWithin(process.Message{Payload: "hi"}, 10*time.Second)); err != nil {
					return process.PID{}, err
				}
				r, err := call.Wait(10*time.Second, nil)
				if err == nil {
					err = r.Err
				}
				return r.From, err
			}
			if _, err := ask(); err != nil {
				t.Fatalf("ask before the restart: %v", err)
			}
			gossip, transport := old.c.Membership().Addr(), old.c.Network().Addr()
			oldCreation := old.node.Creation()
			switch {
			case tt.zombie:
				_ = old.node.Kill(oldEcho)
				tc.freeze(tt.restarts)
			case tt.crash:
				tc.crash(tt.restarts)
			default:
				tc.stop(tt.restarts)
			}
			n1 := tc.node(tt.survivor).c
			if !tt.crash {
				testutil.Eventually(t, "n1 to see n2 go", func() bool { _, ok := n1.Membership().Member(tt.restarts); return !ok })
			}
			opts, logs := tc.options(tt.restarts, []string{n1.Membership().Addr()})
			opts.Bind, opts.TransportBind = gossip, transport
			fresh := tc.startWith(tt.restarts, opts, logs)
			spawnEcho(fresh.node)
			testutil.EventuallyWithin(t, 30*time.Second, "n1 to see the new n2", func() bool {
				m, ok := n1.Membership().Member(tt.restarts)
				return ok && m.Meta.Creation == fresh.node.Creation() && m.Meta.Creation != oldCreation
			})
			from, err := ask()
			if err != nil {
				t.Fatalf("the first ask after the restart: %v", err)
			}
			if from.Creation != fresh.node.Creation() {
				t.Fatalf("the first ask after the restart was answered by %s, not by the new incarnation (creation %d)", from, fresh.node.Creation())
			}
		})
	}
}

// freeze takes a node off the cluster as a machine that vanishes does: its
// membership stops without a word and its listener closes, but its
// transport connections stay open (nobody closes them, nothing answers on
// them that the new incarnation would).
func (tc *tcluster) freeze(name string) {
	n := tc.silence(name)
	n.c.net.Drain() // gone: it dials nobody again
	_ = n.c.net.ln.Close()
	tc.t.Cleanup(func() { _ = n.c.Close() })
}

// A node killed and started again at once under its name on other ports
// (a pod rescheduled), before the others declare the old run dead, is not
// refused: the old run does not answer its pings, so it waits, and the
// others take it at its new address once they have declared the old one
// dead. Before, its start failed with ErrNameTaken.
func TestRestartOnAnotherAddressBeforeDeclaredDead(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2", "n3")
	tc.converged(20 * time.Second)
	oldCreation := tc.node("n2").node.Creation()
	tc.crash("n2")
	restarted := time.Now()
	opts, logs := tc.options("n2", []string{tc.seed})
	fresh := tc.startWith("n2", opts, logs)
	if err := fresh.c.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"n1", "n3"} {
		ms := tc.node(name).c.Membership()
		testutil.EventuallyWithin(t, 20*time.Second, name+" to hold the new n2", func() bool {
			m, ok := ms.Member("n2")
			return ok && m.Meta.Creation == fresh.node.Creation() && m.Meta.Creation != oldCreation && m.Gossip == fresh.c.Membership().Addr()
		})
	}
	t.Logf("the others hold the restarted n2 after %s", time.Since(restarted))
	testutil.Eventually(t, "the new n2 to see the others", func() bool { return len(fresh.c.Membership().Members()) == 2 })
	if err := fresh.c.Err(); err != nil {
		t.Fatalf("the restarted node: %v", err)
	}
}

// The broadcasts of a node restarted under its name reach the others: a
// new run numbered its broadcasts from 1 again, and the others, which
// remembered the old run's, dropped them as seen (a restarted pg scope's
// start notice among them: its members did not reach some nodes for 10 s).
func TestRestartedNodesBroadcastsAreNotTakenAsSeen(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	box := &inbox{}
	if _, err := tc.node("n1").c.Membership().Handle(kindTestA, box.handler); err != nil {
		t.Fatal(err)
	}
	old := tc.node("n2")
	gossip, transport := old.c.Membership().Addr(), old.c.Network().Addr()
	if err := old.c.Membership().Broadcast(kindTestA, []byte("old run")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "n1 to get the old run's broadcast", func() bool { return box.has("n2:old run") })
	tc.crash("n2")
	n1 := tc.node("n1").c.Membership()
	testutil.EventuallyWithin(t, 20*time.Second, "n1 to declare n2 dead", func() bool { _, ok := n1.Member("n2"); return !ok })
	opts, logs := tc.options("n2", []string{tc.seed})
	opts.Bind, opts.TransportBind = gossip, transport
	fresh := tc.startWith("n2", opts, logs)
	testutil.EventuallyWithin(t, 20*time.Second, "n1 to hold the new n2", func() bool {
		m, ok := n1.Member("n2")
		return ok && m.Meta.Creation == fresh.node.Creation()
	})
	if err := fresh.c.Membership().Broadcast(kindTestA, []byte("new run")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "n1 to get the new run's first broadcast", func() bool { return box.has("n2:new run") })
}
