package cluster

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

func TestConvergeAndMessage(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2", "n3", "n4")
	tc.converged(20 * time.Second)
	// Every pair exchanges an ask both ways: each direction's connection
	// works, whichever node dialed it.
	for _, a := range []string{"n1", "n2", "n3", "n4"} {
		for _, b := range []string{"n1", "n2", "n3", "n4"} {
			if a == b {
				continue
			}
			pid := spawn(t, tc.node(b).node, echo)
			v, from, err := tc.node(a).node.Ask(pid, process.Message{Topic: "ping", Payload: a}, 10*time.Second)
			if err != nil || v != a || from != pid {
				t.Fatalf("%s asks %s: %v %v %v", a, b, v, from, err)
			}
		}
	}
	st := tc.node("n1").c.Status()
	if len(st.Members) != 3 || st.Members[0].Name != "n2" || st.Members[0].Peer == nil || !st.Members[0].Peer.Connected {
		t.Fatalf("status: %+v", st)
	}
}

func TestSendToUnknownNodeFailsAtOnce(t *testing.T) {
	tc := newTestCluster(t, "n1")
	n := tc.node("n1").node
	start := time.Now()
	err := n.Send(process.PID{Node: "nowhere", ID: 1, Creation: 1}, process.Message{Topic: "x"})
	if !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send: %v", err)
	}
	_, _, err = n.Ask(process.PID{Node: "nowhere", ID: 1, Creation: 1}, process.Message{Topic: "x"}, 10*time.Second)
	if !errors.Is(err, process.ErrUnreachable) || time.Since(start) > time.Second {
		t.Fatalf("ask: %v after %s", err, time.Since(start))
	}
}

func TestSubscribeSeesJoinLeaveWithMetadata(t *testing.T) {
	tc := newTestCluster(t, "n1")
	events := make(chan Event, 16)
	members, cancel := tc.node("n1").c.Membership().Subscribe(func(e Event) { events <- e })
	defer cancel()
	if len(members) != 0 {
		t.Fatalf("members %v", members)
	}
	n2 := tc.start("n2")
	e := receive(t, events, "join event")
	if e.Kind != MemberJoined || e.Member.Name != "n2" || e.Member.Transport != n2.c.Network().Addr() || e.Member.Meta.Protocol != ProtocolVersion {
		t.Fatalf("event %+v", e)
	}
	tc.stop("n2")
	start := time.Now()
	e = receive(t, events, "leave event")
	if e.Kind != MemberLeft || e.Member.Name != "n2" || e.Member.State != StateLeft {
		t.Fatalf("event %+v", e)
	}
	t.Logf("graceful leave seen after %s", time.Since(start))
	if m := tc.node("n1").c.Membership().Members(); len(m) != 0 {
		t.Fatalf("members after leave: %v", names(m))
	}
	known := tc.node("n1").c.Membership().Known()
	if len(known) != 1 || known[0].State != StateLeft {
		t.Fatalf("known: %+v", known)
	}
}

// A crashed node (no leave) is gone from every other node within the
// target of 5 s, and the monitors of its processes fire with
// noconnection.
func TestCrashedNodeIsGone(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2", "n3", "n4")
	tc.converged(20 * time.Second)
	victim := spawn(t, tc.node("n4").node, echo)
	watchers := map[string]*probe{}
	gone := map[string]chan time.Time{}
	for _, name := range []string{"n1", "n2", "n3"} {
		pr := spawnProbe(t, tc.node(name).node)
		if err := tc.node(name).node.Monitor(pr.pid, victim); err != nil {
			t.Fatal(err)
		}
		watchers[name] = pr
		ch := make(chan time.Time, 1)
		gone[name] = ch
		_, cancel := tc.node(name).c.Membership().Subscribe(func(e Event) {
			if e.Kind == MemberLeft && e.Member.Name == "n4" {
				ch <- time.Now()
			}
		})
		defer cancel()
	}
	// The monitors are in place on n4 once a round trip has gone by.
	for name := range watchers {
		if _, _, err := tc.node(name).node.Ask(victim, process.Message{Topic: "sync"}, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	tc.crash("n4")
	var worst time.Duration
	for name, ch := range gone {
		at := receive(t, ch, name+": n4 gone")
		worst = max(worst, at.Sub(start))
		e := receive(t, watchers[name].events, name+": EXIT")
		if e.Kind != process.EventExit || e.From != victim || !errors.Is(e.Exit.Err, process.ErrNoConnection) {
			t.Fatalf("%s: event %+v", name, e)
		}
	}
	t.Logf("crash detected by every node after %s", worst)
	if worst > 10*time.Second {
		t.Fatalf("crash detected after %s; the target is 5s", worst)
	}
}

func TestWrongSecretIsRefused(t *testing.T) {
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	for _, secret := range [][]byte{[]byte("another secret of sixteen bytes+"), nil} {
		opts, logs := tc.options("intruder", []string{tc.seed})
		opts.Secret = secret
		opts.Timing.RejoinMax = 200 * time.Millisecond
		c, err := Start(opts)
		if err != nil {
			t.Fatal(err)
		}
		// It keeps trying; it never becomes a member, nor sees one.
		time.Sleep(2 * time.Second)
		if m := c.Membership().Members(); len(m) != 0 {
			t.Errorf("intruder (secret %q) sees %v", secret, names(m))
		}
		for _, n := range []string{"n1", "n2"} {
			if m := tc.node(n).c.Membership().Members(); len(m) != 1 {
				t.Errorf("%s sees %v", n, names(m))
			}
		}
		// Nor can it connect to a transport: its proof is refused, and
		// so is the node's proof to it.
		_ = c.Close()
		_ = logs
	}
	key, _ := DeriveKeys([]byte("another secret of sixteen bytes+"))
	err := dialRaw(t, tc.node("n2").c.Network().Addr(), key.Handshake, "n1", "n2")
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("handshake with the wrong key: %v", err)
	}
	testutil.Eventually(t, "the refusal logged", func() bool {
		return slices.ContainsFunc([]string{tc.node("n2").logs.String()}, func(s string) bool { return contains(s, "connection refused") })
	})
}
