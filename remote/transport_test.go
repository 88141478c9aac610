package remote

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote/wire"
	"github.com/proctor-run/proctor/value"
)

// errBadState is a sentinel of this test: any package's sentinel with a
// code keeps its identity across the wire, wrapped or not.
var errBadState = value.Sentinel("remote_test.bad_state", value.KindInvalid, "bad state")

// Tells and asks cross nodes: payloads arrive as values, the sender's PID
// comes with the message, and an ask learns which process replied.
func TestSendAndAskAcrossNodes(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	pr := c.spawnProbe("n2", process.SpawnOptions{})
	from := c.spawn("n1", echo, process.SpawnOptions{})
	payload := map[string]any{"k": []any{1.0, "two", true}, "e": value.NewError(value.KindLimit, "x")}
	if err := c.nodes["n1"].Send(pr.pid, process.Message{From: from, Topic: "hello", Payload: payload}); err != nil {
		t.Fatal(err)
	}
	m := pr.msg(t)
	if m.Topic != "hello" || m.From != from || !reflect.DeepEqual(m.Payload, payload) || m.CanReply() {
		t.Fatalf("message = %+v", m)
	}

	e := c.spawn("n2", echo, process.SpawnOptions{})
	v, replier, err := c.nodes["n1"].Ask(e, process.Message{Topic: "ping", Payload: "p"}, 5*time.Second)
	if err != nil || v != "p" || replier != e {
		t.Fatalf("ask = %v %v %v", v, replier, err)
	}

	// AskFunc and a Call that carries its deadline work the same way.
	got := make(chan any, 1)
	c.nodes["n1"].AskFunc(e, process.Message{Payload: 2.0}, 5*time.Second, func(v any, _ process.PID, err error) { got <- v })
	if v := <-got; v != 2.0 {
		t.Fatalf("ask func = %v", v)
	}
	call := process.NewCall()
	if err := c.nodes["n1"].Send(e, call.MessageWithin(process.Message{Payload: 3.0}, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if r, err := call.Wait(5*time.Second, nil); err != nil || r.Value != 3.0 {
		t.Fatalf("call = %+v %v", r, err)
	}

	// What cannot cross a node fails at the sender, at once.
	err = c.nodes["n1"].Send(pr.pid, process.Message{Payload: func() {}})
	if value.KindOf(err) != value.KindInvalid {
		t.Fatalf("send of a func: %v", err)
	}
	if n := c.trs["n1"].Stats().Pending; n != 0 {
		t.Fatalf("%d asks still pending", n)
	}
}

// A registered name is addressable on another node ({Name, Node} !
// Msg): resolved there on arrival; an ask of an unknown name fails with
// ErrNameNotFound.
func TestSendByNameAcrossNodes(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	e := c.spawn("n2", echo, process.SpawnOptions{Name: "echo"})
	call := process.NewCall()
	if err := c.nodes["n1"].SendName("n2", "echo", call.MessageWithin(process.Message{Payload: "hi"}, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	r, err := call.Wait(5*time.Second, nil)
	if err != nil || r.Value != "hi" || r.From != e {
		t.Fatalf("ask by name = %+v %v", r, err)
	}
	call = process.NewCall()
	if err := c.nodes["n1"].SendName("n2", "nobody", call.MessageWithin(process.Message{}, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	// The error names the name and its node, as a local one names the
	// name (it said only "no process registered under that name").
	if r, err := call.Wait(5*time.Second, nil); err != nil || !errors.Is(r.Err, process.ErrNameNotFound) || !strings.Contains(r.Err.Error(), `"nobody" on node n2`) {
		t.Fatalf("ask of an unknown name = %+v %v", r, err)
	}
	if err := c.nodes["n1"].SendName("n9", "echo", process.Message{}); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send by name to an unknown node: %v", err)
	}
}

// name@node resolves on that node (a Whereis round trip).
func TestResolveAcrossNodes(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	e := c.spawn("n2", echo, process.SpawnOptions{Name: "echo"})
	if pid, err := c.nodes["n1"].Resolve("echo@n2"); err != nil || pid != e {
		t.Fatalf("resolve echo@n2 = %v %v", pid, err)
	}
	if _, err := c.nodes["n1"].Resolve("nobody@n2"); !errors.Is(err, process.ErrNameNotFound) {
		t.Fatalf("resolve nobody@n2: %v", err)
	}
	if _, err := c.nodes["n1"].Resolve("echo@n9"); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("resolve echo@n9: %v", err)
	}
	if err := c.trs["n1"].Whereis("n2", "echo", process.Message{}); !errors.Is(err, process.ErrNoReplyTarget) {
		t.Fatalf("whereis without a reply target: %v", err)
	}
}

// An ask to a remote process that is gone fails at once with
// ErrNoProcess, as a local one does; a tell to it is dropped.
func TestAskOfAGoneRemoteProcess(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	e := c.spawn("n2", echo, process.SpawnOptions{})
	if err := c.nodes["n2"].Kill(e); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err := c.nodes["n1"].Ask(e, process.Message{}, 10*time.Second)
	if !errors.Is(err, process.ErrNoProcess) || time.Since(start) > 5*time.Second {
		t.Fatalf("ask of a gone process = %v after %s", err, time.Since(start))
	}
	if err := c.nodes["n1"].Send(e, process.Message{}); err != nil {
		t.Fatalf("tell to a gone remote process: %v", err)
	}
	eventually(t, "tell counted as undelivered", func() bool { return c.trs["n2"].Stats().Undelivered == 2 })
	// A node that is not on the network is unreachable at once.
	far := process.PID{Node: "n9", ID: 1, Creation: 1}
	if err := c.nodes["n1"].Send(far, process.Message{}); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send to an unknown node: %v", err)
	}
	if _, _, err := c.nodes["n1"].Ask(far, process.Message{}, time.Second); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("ask of an unknown node: %v", err)
	}
	if n := c.trs["n1"].Stats().Pending; n != 0 {
		t.Fatalf("%d asks still pending", n)
	}
}

// Errors keep their kind, code and members across the wire: a sentinel
// wrapped with context still matches errors.Is, and the aggregate error of
// a scatter/gather arrives as it left.
func TestErrorIdentityAcrossTheWire(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	aggregate := value.Aggregate("all 3 routees failed", []*value.Error{
		value.FromError(fmt.Errorf("ask <n2.4.1> after 10ms: %w", process.ErrTimeout)),
		value.FromError(fmt.Errorf("send to <n2.5.1>: %w", process.ErrNoProcess)),
		value.NewError(value.KindInvalid, "bad input"),
	})
	replies := map[string]error{
		"wrapped":   fmt.Errorf("handler: %w", process.ErrMailboxFull),
		"sentinel":  process.ErrNoProcess,
		"aggregate": aggregate,
		"plain":     errors.New("boom"),
	}
	rejecter := c.spawn("n2", func(ctx process.Context, m process.Message) {
		ctx.Reply(&m, nil, replies[m.Topic])
	}, process.SpawnOptions{})
	ask := func(topic string) error {
		_, _, err := c.nodes["n1"].Ask(rejecter, process.Message{Topic: topic}, 5*time.Second)
		return err
	}

	err := ask("wrapped")
	if !errors.Is(err, process.ErrMailboxFull) || value.KindOf(err) != value.KindLimit || err.Error() != "handler: mailbox full" {
		t.Fatalf("wrapped sentinel = %v (kind %s)", err, value.KindOf(err))
	}
	if errors.Is(err, process.ErrQueueFull) {
		t.Fatal("a limit error matches another limit sentinel")
	}
	if err := ask("sentinel"); err != process.ErrNoProcess {
		t.Fatalf("sentinel = %#v, want the sentinel itself", err)
	}
	err = ask("aggregate")
	var ve *value.Error
	if !errors.As(err, &ve) || !reflect.DeepEqual(ve, aggregate) {
		t.Fatalf("aggregate = %#v, want %#v", err, aggregate)
	}
	if !errors.Is(ve.Errors[0], process.ErrTimeout) || !errors.Is(ve.Errors[1], process.ErrNoProcess) {
		t.Fatalf("aggregate members lost their identity: %v", ve.String())
	}
	if err := ask("plain"); value.KindOf(err) != value.KindInternal || err.Error() != "boom" {
		t.Fatalf("plain error = %v (kind %s)", err, value.KindOf(err))
	}

	// A reply that cannot cross a node rejects the ask at once.
	odd := c.spawn("n2", func(ctx process.Context, m process.Message) {
		ctx.Reply(&m, make(chan int), nil)
	}, process.SpawnOptions{})
	start := time.Now()
	_, _, err = c.nodes["n1"].Ask(odd, process.Message{}, 10*time.Second)
	if value.KindOf(err) != value.KindInvalid || time.Since(start) > 5*time.Second {
		t.Fatalf("ask answered with a channel = %v after %s", err, time.Since(start))
	}
}

// A monitor across nodes reports the remote process's exit with its value
// and reason; a demonitor stops it; a monitor of a gone process reports
// ErrNoProcess at once.
func TestMonitorAcrossNodes(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	w := c.spawnProbe("n1", process.SpawnOptions{})
	n1, n2 := c.nodes["n1"], c.nodes["n2"]
	reason := errBadState
	target := c.spawn("n2", func(ctx process.Context, m process.Message) {
		ctx.Stop("last words", fmt.Errorf("crashed: %w", reason))
	}, process.SpawnOptions{})
	if err := n1.Monitor(w.pid, target); err != nil {
		t.Fatal(err)
	}
	c.roundTrip("n2", "n1") // the monitor is in place
	if err := n1.Send(target, process.Message{}); err != nil {
		t.Fatal(err)
	}
	e := w.event(t)
	if e.Kind != process.EventExit || e.From != target || e.Exit.Value != "last words" || !errors.Is(e.Exit.Err, reason) {
		t.Fatalf("event = %+v", e)
	}

	// An exit value that cannot cross a node is left out; the exit is not.
	odd := c.spawn("n2", func(ctx process.Context, m process.Message) {
		ctx.Stop(func() {}, errBadState)
	}, process.SpawnOptions{})
	if err := n1.Monitor(w.pid, odd); err != nil {
		t.Fatal(err)
	}
	c.roundTrip("n2", "n1")
	_ = n1.Send(odd, process.Message{})
	if e := w.event(t); e.From != odd || e.Exit.Value != nil || !errors.Is(e.Exit.Err, errBadState) {
		t.Fatalf("event = %+v", e)
	}

	// Demonitor: the exit is not reported.
	quiet := c.spawn("n2", echo, process.SpawnOptions{})
	if err := n1.Monitor(w.pid, quiet); err != nil {
		t.Fatal(err)
	}
	n1.Demonitor(w.pid, quiet)
	c.roundTrip("n2", "n1")
	_ = n2.Kill(quiet)
	c.noEvent(t, w, "n2")

	// A target that is already gone.
	if err := n1.Monitor(w.pid, quiet); err != nil {
		t.Fatal(err)
	}
	if e := w.event(t); e.From != quiet || !errors.Is(e.Exit.Err, process.ErrNoProcess) {
		t.Fatalf("event = %+v", e)
	}

	// The watcher exits first: its monitor is dropped on the far node, so
	// the target's exit sends nothing.
	gone := c.spawnProbe("n1", process.SpawnOptions{})
	target2 := c.spawn("n2", echo, process.SpawnOptions{})
	if err := n1.Monitor(gone.pid, target2); err != nil {
		t.Fatal(err)
	}
	_ = n1.Kill(gone.pid)
	c.roundTrip("n2", "n1")
	sent := c.trs["n2"].Stats().Sent
	_ = n2.Kill(target2)
	c.roundTrip("n1", "n2")
	if got := c.trs["n2"].Stats().Sent - sent; got != 1 { // the round trip's reply
		t.Fatalf("the target's exit sent %d envelopes to a watcher that is gone", got-1)
	}
}

// Links across nodes, whichever side exits: an abnormal exit stops the
// other side with a *LinkError, or is a LINK_DOWN event when it traps; a
// normal exit only removes the link.
func TestLinkAcrossNodes(t *testing.T) {
	crash := value.NewError(value.KindInternal, "crash")
	tests := []struct {
		name     string
		trap     bool
		exitErr  error
		wantStop bool
		wantDown bool
	}{
		{"abnormal exit stops the other side", false, crash, true, false},
		{"abnormal exit is an event when trapped", true, crash, false, true},
		{"normal exit leaves the other side", false, nil, false, false},
		{"normal exit is silent when trapped", true, nil, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, "n1", "n2")
			n1 := c.nodes["n1"]
			local := c.spawnProbe("n1", process.SpawnOptions{TrapLinks: tc.trap})
			remote := c.spawn("n2", func(ctx process.Context, m process.Message) {
				ctx.Stop(nil, tc.exitErr)
			}, process.SpawnOptions{})
			if err := n1.Link(local.pid, remote); err != nil {
				t.Fatal(err)
			}
			c.roundTrip("n2", "n1")
			localExit := exitOf(t, n1, local.pid)
			if err := n1.Send(remote, process.Message{}); err != nil {
				t.Fatal(err)
			}
			if tc.wantStop {
				x := localExit(t)
				var le *process.LinkError
				if !errors.As(x.Err, &le) || le.From != remote || !errors.Is(x.Err, crash) {
					t.Fatalf("exit = %+v", x)
				}
				return
			}
			if tc.wantDown {
				e := local.event(t)
				if e.Kind != process.EventLinkDown || e.From != remote || !errors.Is(e.Exit.Err, crash) {
					t.Fatalf("event = %+v", e)
				}
			}
			eventually(t, "remote exited", func() bool { return c.nodes["n2"].Alive(remote) == false })
			c.noEvent(t, local, "n2")
			if !n1.Alive(local.pid) {
				t.Fatal("the local side died")
			}
		})
	}
}

// The local side exits: the remote side linked to it is stopped; and an
// unlink on either side removes the link on both.
func TestLinkFromTheOtherSide(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	n1, n2 := c.nodes["n1"], c.nodes["n2"]
	remote := c.spawnProbe("n2", process.SpawnOptions{})
	local := c.spawn("n1", func(ctx process.Context, m process.Message) {
		ctx.Stop(nil, errors.New("local crash"))
	}, process.SpawnOptions{})
	if err := n1.Link(local, remote.pid); err != nil {
		t.Fatal(err)
	}
	c.roundTrip("n2", "n1")
	remoteExit := exitOf(t, n2, remote.pid)
	_ = n1.Send(local, process.Message{})
	x := remoteExit(t)
	var le *process.LinkError
	if !errors.As(x.Err, &le) || le.From != local || le.Reason.Error() != "local crash" {
		t.Fatalf("remote exit = %+v", x)
	}

	// Unlink from the linking side, then from the linked side.
	for _, unlinkOn := range []string{"n1", "n2"} {
		a := c.spawnProbe("n1", process.SpawnOptions{})
		b := c.spawn("n2", func(ctx process.Context, m process.Message) {
			ctx.Stop(nil, errors.New("crash"))
		}, process.SpawnOptions{})
		if err := n1.Link(a.pid, b); err != nil {
			t.Fatal(err)
		}
		c.roundTrip("n2", "n1")
		if unlinkOn == "n1" {
			n1.Unlink(a.pid, b)
		} else {
			n2.Unlink(b, a.pid)
		}
		c.roundTrip("n1", "n2")
		c.roundTrip("n2", "n1")
		_ = n1.Send(b, process.Message{})
		eventually(t, "b exited", func() bool { return !n2.Alive(b) })
		c.noEvent(t, a, "n2")
		if !n1.Alive(a.pid) {
			t.Fatalf("unlinked on %s, yet the link fired", unlinkOn)
		}
	}
}

// Linking to a remote process that is gone makes the link and fires it
// with ErrNoProcess, as Erlang does for a remote link.
func TestLinkToAGoneRemoteProcess(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	n1 := c.nodes["n1"]
	gone := c.spawn("n2", echo, process.SpawnOptions{})
	_ = c.nodes["n2"].Kill(gone)
	trapper := c.spawnProbe("n1", process.SpawnOptions{TrapLinks: true})
	if err := n1.Link(trapper.pid, gone); err != nil {
		t.Fatal(err)
	}
	if e := trapper.event(t); e.Kind != process.EventLinkDown || e.From != gone || !errors.Is(e.Exit.Err, process.ErrNoProcess) {
		t.Fatalf("event = %+v", e)
	}
	plain := c.spawnProbe("n1", process.SpawnOptions{})
	plainExit := exitOf(t, n1, plain.pid)
	if err := n1.Link(plain.pid, gone); err != nil {
		t.Fatal(err)
	}
	if x := plainExit(t); !errors.Is(x.Err, process.ErrNoProcess) {
		t.Fatalf("exit = %+v", x)
	}
}

// An incoming link is recorded, never echoed back out: the far node sends
// nothing for it.
func TestIncomingLinkDoesNotEcho(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	a := c.spawnProbe("n1", process.SpawnOptions{})
	b := c.spawnProbe("n2", process.SpawnOptions{})
	c.roundTrip("n2", "n1")
	before := c.trs["n2"].Stats().Sent
	if err := c.nodes["n1"].Link(a.pid, b.pid); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes["n1"].Monitor(a.pid, b.pid); err != nil {
		t.Fatal(err)
	}
	c.roundTrip("n2", "n1") // its reply is the one envelope n2 may send
	if got := c.trs["n2"].Stats().Sent - before; got != 1 {
		t.Fatalf("n2 sent %d envelopes, want only the round trip's reply", got)
	}
	// The link is real on both sides: b's crash reaches a.
	aExit := exitOf(t, c.nodes["n1"], a.pid)
	_ = c.nodes["n2"].Exit(b.pid, errors.New("crash"))
	if x := aExit(t); !errors.As(x.Err, new(*process.LinkError)) {
		t.Fatalf("exit = %+v", x)
	}
}

// Kill, Terminate and Exit reach remote processes; a remote process
// stopped that way reports the reason to its watchers. A system process
// refuses stop requests from other nodes unless they come from its parent.
func TestKillAndTerminateAcrossNodes(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	n1, n2 := c.nodes["n1"], c.nodes["n2"]
	w := c.spawnProbe("n1", process.SpawnOptions{})
	cases := []struct {
		name string
		stop func(process.PID) error
		want error
	}{
		{"kill", n1.Kill, process.ErrKilled},
		{"terminate", n1.Terminate, process.ErrShutdown},
		{"exit", func(p process.PID) error { return n1.Exit(p, value.NewError(value.KindLimit, "too big")) }, value.NewError(value.KindLimit, "too big")},
		{"terminate from", func(p process.PID) error { return n1.TerminateFrom(w.pid, p) }, process.ErrShutdown},
	}
	for _, tc := range cases {
		target := c.spawnProbe("n2", process.SpawnOptions{})
		if err := n1.Monitor(w.pid, target.pid); err != nil {
			t.Fatal(err)
		}
		c.roundTrip("n2", "n1")
		if err := tc.stop(target.pid); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if e := w.event(t); e.From != target.pid || !errors.Is(e.Exit.Err, tc.want) {
			t.Fatalf("%s: event = %+v", tc.name, e)
		}
	}

	// A system process on n2: n1's runtime and scripts may not stop it;
	// its parent, on n1, may.
	parent := c.spawnProbe("n1", process.SpawnOptions{})
	sys := c.spawnProbe("n2", process.SpawnOptions{System: true, LinkTo: parent.pid})
	c.roundTrip("n2", "n1")
	for _, stop := range []func() error{
		func() error { return n1.Kill(sys.pid) },
		func() error { return n1.Terminate(sys.pid) },
		func() error { return n1.TerminateFrom(w.pid, sys.pid) },
	} {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	c.roundTrip("n2", "n1")
	if !n2.Alive(sys.pid) {
		t.Fatal("a system process obeyed a stop request from another node")
	}
	sysExit := exitOf(t, n2, sys.pid)
	if err := n1.TerminateFrom(parent.pid, sys.pid); err != nil {
		t.Fatal(err)
	}
	if x := sysExit(t); !errors.Is(x.Err, process.ErrShutdown) {
		t.Fatalf("exit = %+v", x)
	}
}

// A node going down fires every monitor and link with its processes with
// ErrNoConnection, fails the asks waiting for it, and does the same on the
// node that went down for everyone it was connected to.
func TestNodeDown(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	n1, n2 := c.nodes["n1"], c.nodes["n2"]
	watcher := c.spawnProbe("n1", process.SpawnOptions{})
	trapper := c.spawnProbe("n1", process.SpawnOptions{TrapLinks: true})
	linked := c.spawnProbe("n1", process.SpawnOptions{})
	bystander := c.spawnProbe("n1", process.SpawnOptions{})
	onN2 := c.spawnProbe("n2", process.SpawnOptions{TrapLinks: true})
	onN3 := c.spawnProbe("n3", process.SpawnOptions{})
	slow := c.spawn("n2", func(process.Context, process.Message) {}, process.SpawnOptions{}) // never replies

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(n1.Monitor(watcher.pid, onN2.pid))
	must(n1.Link(trapper.pid, onN2.pid))
	must(n1.Link(linked.pid, onN2.pid))
	must(n1.Monitor(bystander.pid, onN3.pid)) // another node: untouched
	c.roundTrip("n2", "n1")
	linkedExit := exitOf(t, n1, linked.pid)
	asked := make(chan error, 1)
	n1.AskFunc(slow, process.Message{}, 30*time.Second, func(_ any, _ process.PID, err error) { asked <- err })
	eventually(t, "ask pending", func() bool { return c.trs["n1"].Stats().Pending == 1 })

	c.net.Down("n2")

	if e := watcher.event(t); e.Kind != process.EventExit || e.From != onN2.pid || !errors.Is(e.Exit.Err, process.ErrNoConnection) {
		t.Fatalf("monitor: %+v", e)
	}
	if e := trapper.event(t); e.Kind != process.EventLinkDown || e.From != onN2.pid || !errors.Is(e.Exit.Err, process.ErrNoConnection) {
		t.Fatalf("trapped link: %+v", e)
	}
	if x := linkedExit(t); !errors.Is(x.Err, process.ErrNoConnection) {
		t.Fatalf("link: %+v", x)
	}
	select {
	case err := <-asked:
		if !errors.Is(err, process.ErrNoConnection) {
			t.Fatalf("pending ask: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the pending ask did not fail")
	}
	if n := c.trs["n1"].Stats().Pending; n != 0 {
		t.Fatalf("%d asks still pending", n)
	}
	c.noEvent(t, bystander, "n3")

	// n2 saw n1 go down too: its trapping process got LINK_DOWN for both
	// links, and nothing reaches n1 from it now.
	for range 2 {
		if e := onN2.event(t); e.Kind != process.EventLinkDown || e.From.Node != "n1" || !errors.Is(e.Exit.Err, process.ErrNoConnection) {
			t.Fatalf("n2 side: %+v", e)
		}
	}
	if err := n2.Send(watcher.pid, process.Message{}); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send from a node that is down: %v", err)
	}
	// Monitoring a process of a node that is down reports at once.
	if err := n1.Monitor(watcher.pid, onN2.pid); err != nil {
		t.Fatal(err)
	}
	if e := watcher.event(t); !errors.Is(e.Exit.Err, process.ErrUnreachable) {
		t.Fatalf("monitor of a down node: %+v", e)
	}
	if err := n1.Link(trapper.pid, onN2.pid); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("link to a down node: %v", err)
	}
}

// A node restarted under the same name is a new incarnation: a PID of the
// old one reaches nothing, and the two creations differ even when the
// restart comes within the same second.
func TestRestartedNode(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	old := c.spawn("n2", echo, process.SpawnOptions{})
	oldTr := c.trs["n2"]
	c.net.Down("n2")
	_ = oldTr.Close()
	n2 := c.start("n2")
	if n2.Creation() == old.Creation {
		t.Fatalf("restart reused creation %d", old.Creation)
	}
	fresh := c.spawn("n2", echo, process.SpawnOptions{})
	if fresh.ID != old.ID {
		t.Fatalf("test assumes the same id, got %d and %d", fresh.ID, old.ID)
	}
	if _, _, err := c.nodes["n1"].Ask(old, process.Message{}, 5*time.Second); !errors.Is(err, process.ErrNoProcess) {
		t.Fatalf("ask of the old incarnation: %v", err)
	}
	if _, _, err := c.nodes["n1"].Ask(fresh, process.Message{}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// An ask whose reply is still on its way when the deadline passes: the
// asker gets ErrTimeout at its deadline, the late reply is dropped, and
// nothing stays in the table.
func TestAskExpiresWhileReplyInFlight(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	e := c.spawn("n2", echo, process.SpawnOptions{})
	// The reply is held on its way until the ask has ended on both sides
	// (a fixed 400 ms delay against a 100 ms deadline raced the clocks on
	// a loaded machine): the asker can only give up at its own deadline,
	// and the reply can only come after the transport forgot the ask.
	// The deadline leaves the echo time to reply: past it, n2 would drop
	// the reply itself (it knows the deadline) and nothing would cross.
	const deadline = 2 * time.Second
	release, held := make(chan struct{}), make(chan struct{})
	c.net.SetFault(func(from, to string, frame []byte) (bool, time.Duration) {
		if env, err := wire.Decode(frame); err == nil && env.Signal == wire.Reply {
			close(held)
			<-release
		}
		return false, 0
	})
	_, _, err := c.nodes["n1"].Ask(e, process.Message{Payload: "late"}, deadline)
	if !errors.Is(err, process.ErrTimeout) {
		close(release)
		t.Fatalf("ask = %v, want a timeout", err)
	}
	select {
	case <-held:
	default:
		close(release)
		t.Fatalf("the echo did not reply within the ask's %s", deadline)
	}
	// The transport's entry expires on its own timer, a moment after the
	// asker's (a reply in between settles nothing and is not reported).
	eventually(t, "the ask expired in the transport", func() bool {
		s := c.trs["n1"].Stats()
		return s.Expired == 1 && s.Pending == 0
	})
	close(release)
	// The transport counts the late reply, then reports its dead letter:
	// wait for both.
	eventually(t, "late reply arrived, was dropped and reported", func() bool {
		return c.trs["n1"].Stats().LateReplies == 1 && len(c.deadLetters()) > 0
	})
	if d := c.deadLetters(); len(d) != 1 || d[0].Reason != process.DeadLateReply || d[0].From != e {
		t.Fatalf("dead letters %+v, want one late reply from %s", d, e)
	}

	// A reply that never comes: the entry still leaves at the deadline.
	c.net.SetFault(func(from, to string, frame []byte) (bool, time.Duration) { return from == "n2", 0 })
	got := make(chan error, 1)
	c.nodes["n1"].AskFunc(e, process.Message{}, 50*time.Millisecond, func(_ any, _ process.PID, err error) { got <- err })
	if err := <-got; !errors.Is(err, process.ErrTimeout) {
		t.Fatalf("ask func = %v", err)
	}
	eventually(t, "table empty", func() bool { return c.trs["n1"].Stats().Pending == 0 })
}

// An ask that names no deadline (handed on by a local process, or made
// with Call.Message) is kept for Options.ReplyTimeout.
func TestAskWithoutADeadline(t *testing.T) {
	net := NewMemNetwork(MemOptions{})
	defer net.Close()
	n1 := process.NewNode(process.Options{Name: "n1", Logger: quiet})
	n2 := process.NewNode(process.Options{Name: "n2", Logger: quiet})
	t1, err := New(n1, net.Endpoint("n1"), Options{Logger: quiet, ReplyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer t1.Close()
	t2, err := New(n2, net.Endpoint("n2"), Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer t2.Close()
	silent, _ := n2.Spawn(behaviorFunc(func(process.Context, process.Message) {}), process.SpawnOptions{})
	defer n2.Kill(silent)
	e, _ := n2.Spawn(echo, process.SpawnOptions{})
	defer n2.Kill(e)

	call := process.NewCall()
	if err := n1.Send(e, call.Message(process.Message{Payload: "x"})); err != nil {
		t.Fatal(err)
	}
	if r, err := call.Wait(5*time.Second, nil); err != nil || r.Value != "x" {
		t.Fatalf("ask without a deadline = %+v %v", r, err)
	}
	call = process.NewCall()
	if err := n1.Send(silent, call.Message(process.Message{})); err != nil {
		t.Fatal(err)
	}
	if t1.Stats().Pending != 1 {
		t.Fatal("the ask is not pending")
	}
	eventually(t, "entry expired after ReplyTimeout", func() bool { return t1.Stats().Pending == 0 && t1.Stats().Expired == 1 })
	if _, err := call.Wait(10*time.Millisecond, nil); !errors.Is(err, process.ErrTimeout) {
		t.Fatalf("wait = %v", err)
	}
}

// The replying side does not send a reply its asker has stopped waiting
// for.
func TestReplyAfterTheDeadlineIsNotSent(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	release := make(chan struct{})
	answered := make(chan bool, 1)
	slow := c.spawn("n2", func(ctx process.Context, m process.Message) {
		<-release
		ok, _ := ctx.Reply(&m, "too late", nil)
		answered <- ok
	}, process.SpawnOptions{})
	if _, _, err := c.nodes["n1"].Ask(slow, process.Message{}, 50*time.Millisecond); !errors.Is(err, process.ErrTimeout) {
		t.Fatalf("ask = %v", err)
	}
	sent := c.trs["n2"].Stats().Sent
	close(release)
	if <-answered {
		t.Fatal("a reply past the asker's deadline reported as settled")
	}
	if got := c.trs["n2"].Stats().Sent; got != sent {
		t.Fatalf("%d replies sent past the deadline", got-sent)
	}
}

// Frames that are malformed, or name processes their sender does not own,
// are refused and change nothing.
func TestForgedAndMalformedFramesAreRefused(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	victim := c.spawnProbe("n1", process.SpawnOptions{})
	onN3 := process.PID{Node: "n3", ID: 1, Creation: c.nodes["n3"].Creation()}
	frames := []wire.Envelope{
		{Signal: wire.Send, From: onN3, To: victim.pid, Topic: "spoofed"},
		{Signal: wire.Link, From: onN3, To: victim.pid},
		{Signal: wire.LinkExit, From: process.PID{}, To: victim.pid, Err: errors.New("x")},
		{Signal: wire.Kill, To: process.PID{Node: "n3", ID: 1, Creation: 1}},
		{Signal: wire.Reply},
	}
	tr := c.trs["n1"]
	for _, e := range frames {
		b, err := wire.Encode(nil, &e)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Receive("n2", b); !errors.Is(err, ErrForged) {
			t.Fatalf("%s: %v", e.Signal, err)
		}
	}
	if err := tr.Receive("n2", []byte{wire.Version, 1}); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("malformed: %v", err)
	}
	if got := tr.Stats().Refused; got != uint64(len(frames)+1) {
		t.Fatalf("refused = %d", got)
	}
	c.noEvent(t, victim, "n2")
	select {
	case m := <-victim.msgs:
		t.Fatalf("a forged message arrived: %+v", m)
	default:
	}
}

// An ask relayed by a process of one node (a router) to a process of a
// third node is answered through the relay, attributed to the process
// that replied: the reply that crosses from the relay's node names a
// process of another node, and is no forgery (the connection stays).
func TestRelayedReplyAttributedToAThirdNode(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	routee := c.spawn("n2", echo, process.SpawnOptions{})
	relay := c.spawn("n1", func(ctx process.Context, m process.Message) {
		_ = ctx.Node().Send(routee, m) // the ask's reply target goes along
	}, process.SpawnOptions{})
	for i := range 3 {
		v, from, err := c.nodes["n3"].Ask(relay, process.Message{Payload: float64(i)}, 5*time.Second)
		if err != nil || v != float64(i) || from != routee {
			t.Fatalf("relayed ask %d = %v from %s, %v", i, v, from, err)
		}
	}
	if got := c.trs["n3"].Stats().Refused; got != 0 {
		t.Fatalf("%d frames refused", got)
	}
}

// A router on n1 that hands the ask of a process on n2 to a routee on the
// asker's own node n2, or on a third node n3, forwards it on the asker's
// behalf: legal on the wire (a relayed send), the routee sees the asker as
// the sender, and the reply comes back through the router to the asker.
// (A frame that names another node's process without being a relayed send
// stays a forgery: TestForgedAndMalformedFramesAreRefused.)
func TestAskRelayedOnBehalfOfARemoteAsker(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	for _, routeeNode := range []string{"n2", "n3"} {
		t.Run("routee on "+routeeNode, func(t *testing.T) {
			seen := make(chan process.PID, 8)
			routee := c.spawn(routeeNode, func(ctx process.Context, m process.Message) {
				seen <- m.From
				ctx.Reply(&m, m.Payload, nil)
			}, process.SpawnOptions{})
			router := c.spawn("n1", func(ctx process.Context, m process.Message) {
				_ = ctx.Node().Send(routee, m)
			}, process.SpawnOptions{})
			asker := c.spawnProbe("n2", process.SpawnOptions{}).pid
			v, from, err := c.nodes["n2"].Ask(router, process.Message{From: asker, Topic: "q", Payload: "v"}, 5*time.Second)
			if err != nil || v != "v" || from != routee {
				t.Fatalf("relayed ask = %v from %s, %v", v, from, err)
			}
			if from := receive(t, seen, "the routee's message"); from != asker {
				t.Fatalf("the routee saw the ask from %s, not the asker %s", from, asker)
			}
			for _, n := range []string{"n1", "n2", "n3"} {
				if r := c.trs[n].Stats().Refused; r != 0 {
					t.Fatalf("%s refused %d frames", n, r)
				}
			}
		})
	}
}

// Closing a transport fires the links and monitors of its node's processes
// with remote ones, and the other nodes see it go down.
func TestCloseDisconnects(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	w := c.spawnProbe("n1", process.SpawnOptions{})
	far := c.spawnProbe("n2", process.SpawnOptions{})
	if err := c.nodes["n1"].Monitor(w.pid, far.pid); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes["n2"].Monitor(far.pid, w.pid); err != nil {
		t.Fatal(err)
	}
	c.roundTrip("n2", "n1")
	if err := c.trs["n1"].Close(); err != nil {
		t.Fatal(err)
	}
	if e := w.event(t); !errors.Is(e.Exit.Err, process.ErrNoConnection) {
		t.Fatalf("local side: %+v", e)
	}
	if e := far.event(t); !errors.Is(e.Exit.Err, process.ErrNoConnection) {
		t.Fatalf("remote side: %+v", e)
	}
	if err := c.nodes["n1"].Send(far.pid, process.Message{}); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send after close: %v", err)
	}
}

// An envelope larger than the network's frames fails at the sender with
// value.ErrTooLarge (kind limit) as its encoding passes the bound, without
// building it whole: not a long string, not a table shared at every level
// (2^40 strings when expanded). An ask leaves nothing pending, a reply too
// large reaches the asker as that error, and an exit whose value is too
// large still arrives, without it.
func TestEnvelopeTooLarge(t *testing.T) {
	const max = 1 << 20
	c := &cluster{t: t, net: NewMemNetwork(MemOptions{MaxFrame: max}), nodes: map[string]*process.Node{}, trs: map[string]*Transport{}}
	t.Cleanup(c.close)
	c.start("n1")
	c.start("n2")
	pr := c.spawnProbe("n2", process.SpawnOptions{})
	shared := any("0123456789abcdef")
	for range 40 {
		shared = []any{shared, shared}
	}
	for name, payload := range map[string]any{"long string": string(make([]byte, 2*max)), "shared table": shared} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := c.nodes["n1"].Send(pr.pid, process.Message{Topic: "big", Payload: payload})
		runtime.ReadMemStats(&after)
		if !errors.Is(err, value.ErrTooLarge) || value.KindOf(err) != value.KindLimit {
			t.Fatalf("%s: send = %v, want value.ErrTooLarge", name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 8*max {
			t.Fatalf("%s: the refused send allocated %d bytes", name, got)
		}
		_, _, err = c.nodes["n1"].Ask(pr.pid, process.Message{Payload: payload}, 5*time.Second)
		if !errors.Is(err, value.ErrTooLarge) {
			t.Fatalf("%s: ask = %v", name, err)
		}
	}
	if n := c.trs["n1"].Stats().Pending; n != 0 {
		t.Fatalf("%d asks pending after refused asks", n)
	}
	big := c.spawn("n2", func(ctx process.Context, m process.Message) {
		ctx.Reply(&m, string(make([]byte, 2*max)), nil)
	}, process.SpawnOptions{})
	start := time.Now()
	_, _, err := c.nodes["n1"].Ask(big, process.Message{}, 20*time.Second)
	if !errors.Is(err, value.ErrTooLarge) || time.Since(start) > 10*time.Second {
		t.Fatalf("ask answered too large = %v after %s", err, time.Since(start))
	}
	if err := c.nodes["n1"].Send(pr.pid, process.Message{Payload: "small"}); err != nil {
		t.Fatalf("an ordinary send after: %v", err)
	}
	if m := pr.msg(t); m.Payload != "small" {
		t.Fatalf("got %+v", m)
	}
}

// A message too large for another node is a dead letter of its own reason,
// too_large (the node was reachable), and its error names the destination
// as the sender wrote it.
func TestTooLargeIsItsOwnDeadLetter(t *testing.T) {
	const max = 1 << 16
	c := &cluster{t: t, net: NewMemNetwork(MemOptions{MaxFrame: max}), nodes: map[string]*process.Node{}, trs: map[string]*Transport{}}
	t.Cleanup(c.close)
	c.start("n1")
	c.start("n2")
	c.spawn("n2", echo, process.SpawnOptions{Name: "app:svc"})
	err := c.nodes["n1"].SendName("n2", "app:svc", process.Message{Topic: "big", Payload: string(make([]byte, 2*max))})
	if !errors.Is(err, value.ErrTooLarge) || !strings.Contains(err.Error(), "app:svc@n2") || strings.Contains(err.Error(), "<n2.") {
		t.Fatalf("send = %v", err)
	}
	dl := c.deadLetters()
	if len(dl) != 1 || dl[0].Reason != process.DeadTooLarge || dl[0].To != "app:svc@n2" {
		t.Fatalf("dead letters = %+v", dl)
	}
}
