package process

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proctor-run/proctor/value"
)

// fakeTransport records what the core hands to the transport. answer, when
// set, runs inside each call, as a transport whose peer answers before the
// call returns would.
type fakeTransport struct {
	mu     sync.Mutex
	calls  []string
	err    error
	answer func(call string, from, to PID)
	// where answers Whereis (nil: no answer).
	where map[string]PID
}

func (f *fakeTransport) record(call string, from, to PID) error {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf("%s %s %s", call, from, to))
	err, answer := f.err, f.answer
	f.mu.Unlock()
	if answer != nil {
		answer(call, from, to)
	}
	return err
}

func (f *fakeTransport) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

func (f *fakeTransport) Send(to PID, m Message) error { return f.record("send", m.From, to) }
func (f *fakeTransport) SendName(node, name string, m Message) error {
	return f.record("send_name", m.From, PID{Node: node + "/" + name})
}
func (f *fakeTransport) Whereis(node, name string, m Message) error {
	if err := f.record("whereis", m.From, PID{Node: node + "/" + name}); err != nil {
		return err
	}
	f.mu.Lock()
	where := f.where
	f.mu.Unlock()
	if where != nil {
		target, tok := m.ReplyTarget()
		if pid, ok := where[name+"@"+node]; ok {
			target.Settle(tok, pid, nil, nil)
		} else {
			target.Settle(tok, PID{}, nil, ErrNameNotFound)
		}
	}
	return nil
}
func (f *fakeTransport) Exit(from, to PID, reason error) error {
	return f.record("exit", from, to)
}
func (f *fakeTransport) Kill(from, to PID) error       { return f.record("kill", from, to) }
func (f *fakeTransport) Monitor(from, to PID) error    { return f.record("monitor", from, to) }
func (f *fakeTransport) Demonitor(from, to PID)        { _ = f.record("demonitor", from, to) }
func (f *fakeTransport) Link(from, to PID) error       { return f.record("link", from, to) }
func (f *fakeTransport) Unlink(from, to PID)           { _ = f.record("unlink", from, to) }
func (f *fakeTransport) LinkExit(from, to PID, _ Exit) { _ = f.record("link_exit", from, to) }
func (f *fakeTransport) MonitorExit(from, to PID, _ Exit) {
	_ = f.record("monitor_exit", from, to)
}

// recordingTransport keeps the messages sent through it.
type recordingTransport struct {
	*fakeTransport
	sent *[]Message
}

func (r *recordingTransport) Send(to PID, m Message) error {
	r.mu.Lock()
	*r.sent = append(*r.sent, m)
	r.mu.Unlock()
	return nil
}

func (r *recordingTransport) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(*r.sent)
}

func (r *recordingTransport) at(i int) Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return (*r.sent)[i]
}

func newRemoteTestNode(t *testing.T) (*Node, *fakeTransport) {
	n := newTestNode()
	f := &fakeTransport{}
	n.SetTransport(f)
	t.Cleanup(func() { n.SetTransport(nil) })
	return n, f
}

func far(id uint64) PID { return PID{Node: "far", ID: id, Creation: 1} }

// queued returns how many events wait for a local process: inbound
// signals are delivered synchronously, so tests need no sleep to see that
// nothing arrived.
func queued(n *Node, pid PID) int {
	p := n.lookup(pid)
	if p == nil || p.ext.Load() == nil {
		return 0
	}
	return p.ext.Load().events.len()
}

func expect(t *testing.T, f *fakeTransport, want ...string) {
	t.Helper()
	got := f.took()
	if len(got) != len(want) {
		t.Fatalf("transport calls = %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("transport calls = %q, want %q", got, want)
		}
	}
}

// Each remote operation of the core reaches the transport with the local
// process first: Terminate, Exit and Kill of a remote PID included.
func TestOutboundSignals(t *testing.T) {
	n, f := newRemoteTestNode(t)
	a, _ := n.SpawnFunc(waitStop, SpawnOptions{})
	defer n.Kill(a)
	r := far(1)
	steps := []struct {
		do   func() error
		want string
	}{
		{func() error { return n.Send(r, Message{From: a}) }, "send " + a.String() + " " + r.String()},
		{func() error { return n.SendName("far", "svc", Message{From: a}) }, "send_name " + a.String() + " <far/svc.0.0>"},
		{func() error { return n.Terminate(r) }, "exit <> " + r.String()},
		{func() error { return n.TerminateFrom(a, r) }, "exit " + a.String() + " " + r.String()},
		{func() error { return n.Exit(r, errors.New("x")) }, "exit <> " + r.String()},
		{func() error { return n.Kill(r) }, "kill <> " + r.String()},
		{func() error { return n.Monitor(a, r) }, "monitor " + a.String() + " " + r.String()},
		{func() error { n.Demonitor(a, r); return nil }, "demonitor " + a.String() + " " + r.String()},
		{func() error { return n.Link(a, r) }, "link " + a.String() + " " + r.String()},
		{func() error { n.Unlink(r, a); return nil }, "unlink " + a.String() + " " + r.String()},
		{func() error { return n.Link(r, a) }, "link " + a.String() + " " + r.String()},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		expect(t, f, s.want)
	}
	// a exits: its link and a remote watcher are told.
	n.Inbound().Monitor(far(2), a)
	n.Kill(a)
	expect(t, f, "link_exit "+a.String()+" "+r.String(), "monitor_exit "+a.String()+" "+far(2).String())
}

// A transport error is the caller's error; for a monitor of an unreachable
// node it is an EXIT event, and nothing stays recorded.
func TestOutboundErrors(t *testing.T) {
	n, f := newRemoteTestNode(t)
	c := spawnCollector(t, n, SpawnOptions{})
	f.err = fmt.Errorf("node far: %w", ErrUnreachable)
	if err := n.Send(far(1), Message{}); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("send: %v", err)
	}
	if err := n.Kill(far(1)); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("kill: %v", err)
	}
	if err := n.Link(c.pid, far(1)); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("link: %v", err)
	}
	if err := n.Monitor(c.pid, far(1)); err != nil {
		t.Fatal(err)
	}
	if e := c.event(t); e.From != far(1) || !errors.Is(e.Exit.Err, ErrUnreachable) {
		t.Fatalf("event = %+v", e)
	}
	f.err = fmt.Errorf("peer queue: %w", ErrMailboxFull)
	if err := n.Monitor(c.pid, far(1)); !errors.Is(err, ErrMailboxFull) {
		t.Fatalf("monitor with a full queue: %v", err)
	}
	p := n.lookup(c.pid)
	p.mu.Lock()
	links, watching := len(p.ext.Load().links), len(p.ext.Load().watching)
	p.mu.Unlock()
	if links != 0 || watching != 0 {
		t.Fatalf("failed remote relations left behind: %d links, %d monitors", links, watching)
	}
}

// A peer may answer before the transport call returns: the core records
// a remote monitor or link before handing it on, so the answer finds it.
func TestAnswerBeforeTheCallReturns(t *testing.T) {
	n, f := newRemoteTestNode(t)
	in := n.Inbound()
	f.answer = func(call string, from, to PID) {
		switch call {
		case "monitor":
			in.MonitorExit(to, from, Exit{Err: ErrNoProcess})
		case "link":
			in.LinkExit(to, from, Exit{Err: ErrNoProcess})
		}
	}
	c := spawnCollector(t, n, SpawnOptions{TrapLinks: true})
	if err := n.Monitor(c.pid, far(1)); err != nil {
		t.Fatal(err)
	}
	if e := c.event(t); e.Kind != EventExit || !errors.Is(e.Exit.Err, ErrNoProcess) {
		t.Fatalf("monitor answer: %+v", e)
	}
	if err := n.Link(c.pid, far(1)); err != nil {
		t.Fatal(err)
	}
	if e := c.event(t); e.Kind != EventLinkDown || !errors.Is(e.Exit.Err, ErrNoProcess) {
		t.Fatalf("link answer: %+v", e)
	}
}

// What a peer sends is applied locally and never sent back out, unless
// the signal expects an answer (a monitor or link of a process that is
// gone).
func TestInboundSignals(t *testing.T) {
	n, f := newRemoteTestNode(t)
	in := n.Inbound()
	c := spawnCollector(t, n, SpawnOptions{TrapLinks: true})
	r := far(1)

	in.Link(r, c.pid)
	in.Monitor(r, c.pid)
	expect(t, f) // no echo
	p := n.lookup(c.pid)
	p.mu.Lock()
	_, linked := p.ext.Load().links[r]
	_, monitored := p.ext.Load().monitors[r]
	p.mu.Unlock()
	if !linked || !monitored {
		t.Fatalf("linked %v, monitored %v", linked, monitored)
	}
	in.Unlink(r, c.pid)
	in.Demonitor(r, c.pid)
	expect(t, f)
	p.mu.Lock()
	left := len(p.ext.Load().links) + len(p.ext.Load().monitors)
	p.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d relations left after unlink and demonitor", left)
	}

	// A link exit: an event for a trapping process, once, and only for a
	// link that exists.
	in.Link(r, c.pid)
	in.LinkExit(r, c.pid, Exit{Err: errors.New("crash")})
	if e := c.event(t); e.Kind != EventLinkDown || e.From != r {
		t.Fatalf("event = %+v", e)
	}
	in.LinkExit(r, c.pid, Exit{Err: errors.New("again")})
	in.MonitorExit(r, c.pid, Exit{Err: errors.New("not monitored")})
	if q := queued(n, c.pid); q != 0 {
		t.Fatalf("%d events for relations that do not exist", q)
	}
	expect(t, f)

	// Signals about a process that is gone are answered.
	gone := PID{Node: n.Name(), ID: 1 << 40, Creation: n.creation}
	in.Monitor(r, gone)
	in.Link(r, gone)
	expect(t, f, "monitor_exit "+gone.String()+" "+r.String(), "link_exit "+gone.String()+" "+r.String())

	// An ask to a process that is gone is rejected at once.
	call := NewCall()
	if err := in.Send(gone, call.Message(Message{From: r})); !errors.Is(err, ErrNoProcess) {
		t.Fatalf("send to gone: %v", err)
	}
	if res, err := call.Wait(time.Second, nil); err != nil || !errors.Is(res.Err, ErrNoProcess) {
		t.Fatalf("ask of gone = %+v %v", res, err)
	}
	if err := in.Send(c.pid, Message{From: r, Topic: "hi"}); err != nil {
		t.Fatal(err)
	}
	if m := <-c.msgs; m.From != r || m.Topic != "hi" {
		t.Fatalf("message = %+v", m)
	}

	// By registered name: resolved here; an unknown name rejects an ask.
	if err := n.Register("svc", c.pid); err != nil {
		t.Fatal(err)
	}
	if err := in.SendName("svc", Message{From: r, Topic: "by name"}); err != nil {
		t.Fatal(err)
	}
	if m := <-c.msgs; m.Topic != "by name" {
		t.Fatalf("message = %+v", m)
	}
	call = NewCall()
	if err := in.SendName("nobody", call.Message(Message{From: r})); !errors.Is(err, ErrNameNotFound) {
		t.Fatalf("send to an unknown name: %v", err)
	}
	if res, err := call.Wait(time.Second, nil); err != nil || !errors.Is(res.Err, ErrNameNotFound) {
		t.Fatalf("ask of an unknown name = %+v %v", res, err)
	}
	// Node.SendName to this node is Whereis and Send.
	if err := n.SendName(n.Name(), "svc", Message{Topic: "local"}); err != nil {
		t.Fatal(err)
	}
	if m := <-c.msgs; m.Topic != "local" {
		t.Fatalf("message = %+v", m)
	}
	if err := n.SendName(n.Name(), "nobody", Message{}); !errors.Is(err, ErrNameNotFound) {
		t.Fatalf("local send to an unknown name: %v", err)
	}
	if err := n.SendName("far", "<far.1.1>", Message{}); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("send to a pid-shaped name: %v", err)
	}
	expect(t, f)
}

// A peer cannot speak for local processes: relation signals whose from
// claims to be local are ignored, and a stop request from one counts as
// from nobody.
func TestInboundIgnoresForgedLocalSenders(t *testing.T) {
	n, f := newRemoteTestNode(t)
	in := n.Inbound()
	a := spawnCollector(t, n, SpawnOptions{TrapLinks: true})
	b := spawnCollector(t, n, SpawnOptions{})
	if err := n.Link(a.pid, b.pid); err != nil {
		t.Fatal(err)
	}
	in.Unlink(b.pid, a.pid)
	in.LinkExit(b.pid, a.pid, Exit{Err: errors.New("forged")})
	in.MonitorExit(b.pid, a.pid, Exit{Err: errors.New("forged")})
	in.Link(b.pid, a.pid)
	in.Monitor(b.pid, a.pid)
	if q := queued(n, a.pid); q != 0 {
		t.Fatalf("%d forged events delivered", q)
	}
	p := n.lookup(a.pid)
	p.mu.Lock()
	_, linked := p.ext.Load().links[b.pid]
	monitors := len(p.ext.Load().monitors)
	p.mu.Unlock()
	if !linked || monitors != 0 {
		t.Fatalf("forged signals changed relations: linked %v, %d monitors", linked, monitors)
	}
	expect(t, f)

	sys, _ := n.SpawnFunc(waitStop, SpawnOptions{System: true, LinkTo: a.pid})
	defer n.Kill(sys)
	for _, from := range []PID{a.pid, {}, far(9)} {
		if err := in.Exit(from, sys, nil); !errors.Is(err, ErrSystemProcess) {
			t.Fatalf("exit of a system process from %s: %v", from, err)
		}
		if err := in.Kill(from, sys); !errors.Is(err, ErrSystemProcess) {
			t.Fatalf("kill of a system process from %s: %v", from, err)
		}
	}
	if !n.Alive(sys) {
		t.Fatal("a system process obeyed a remote stop request")
	}
}

// NodeDown fires every link and monitor with the node's processes with
// ErrNoConnection, links first, drops the node's monitors of local
// processes, and leaves other nodes' relations alone.
func TestNodeDownFiresRelations(t *testing.T) {
	n, f := newRemoteTestNode(t)
	in := n.Inbound()
	r1, r2, other := far(1), far(2), PID{Node: "other", ID: 1, Creation: 1}
	trapper := spawnCollector(t, n, SpawnOptions{TrapLinks: true})
	target := spawnCollector(t, n, SpawnOptions{})
	plain, _ := n.SpawnFunc(waitStop, SpawnOptions{})
	done, exit, _ := n.Done(plain)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(n.Monitor(trapper.pid, r1))
	must(n.Link(trapper.pid, r2))
	must(n.Monitor(trapper.pid, other))
	in.Link(r1, plain)
	in.Monitor(r2, target.pid)
	f.took()

	in.NodeDown("far")

	e1, e2 := trapper.event(t), trapper.event(t)
	if e1.Kind != EventLinkDown || e1.From != r2 || !errors.Is(e1.Exit.Err, ErrNoConnection) {
		t.Fatalf("first event = %+v, want the link", e1)
	}
	if e2.Kind != EventExit || e2.From != r1 || !errors.Is(e2.Exit.Err, ErrNoConnection) {
		t.Fatalf("second event = %+v, want the monitor", e2)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a process linked to the down node survived")
	}
	var le *LinkError
	if x := exit(); !errors.As(x.Err, &le) || le.From != r1 || !errors.Is(x.Err, ErrNoConnection) {
		t.Fatalf("exit = %+v", x)
	}
	// The down node's monitor of target is gone: target's exit tells
	// nobody there.
	n.Kill(target.pid)
	expect(t, f)
	// Nothing is left to fire, and the index is empty but for other.
	in.NodeDown("far")
	if q := queued(n, trapper.pid); q != 0 {
		t.Fatalf("%d events from a second node down", q)
	}
	n.relMu.Lock()
	_, farLeft := n.rel["far"]
	_, otherLeft := n.rel["other"]
	n.relMu.Unlock()
	if farLeft || !otherLeft {
		t.Fatalf("index: far %v, other %v", farLeft, otherLeft)
	}
	// A process that exits leaves the index.
	n.Kill(trapper.pid)
	n.relMu.Lock()
	left := len(n.rel)
	n.relMu.Unlock()
	if left != 0 {
		t.Fatalf("index keeps %d nodes after its processes exited", left)
	}
}

// Removing the transport fires what nothing could report any more.
func TestRemovingTheTransportDisconnects(t *testing.T) {
	n, _ := newRemoteTestNode(t)
	c := spawnCollector(t, n, SpawnOptions{})
	if err := n.Monitor(c.pid, far(1)); err != nil {
		t.Fatal(err)
	}
	n.SetTransport(nil)
	if e := c.event(t); !errors.Is(e.Exit.Err, ErrNoConnection) {
		t.Fatalf("event = %+v", e)
	}
}

// An ask that leaves the node carries its deadline, and so does a Call
// that names one; a tell carries none, nor (sparing a clock read) an Ask
// or AskFunc of a local process.
func TestMessageDeadline(t *testing.T) {
	n, f := newRemoteTestNode(t)
	var sent []Message
	f.answer = nil
	rec := &recordingTransport{fakeTransport: f, sent: &sent}
	n.SetTransport(rec)
	before := time.Now()
	asked := make(chan error, 1)
	go func() {
		_, _, err := n.Ask(far(1), Message{}, 3*time.Second)
		asked <- err
	}()
	eventually(t, "ask handed to the transport", func() bool { return rec.count() == 1 })
	n.AskFunc(far(1), Message{}, time.Minute, func(any, PID, error) {})
	for i, want := range []time.Duration{3 * time.Second, time.Minute} {
		m := rec.at(i)
		d, ok := m.Deadline()
		if !ok || d.Before(before.Add(want)) || d.After(time.Now().Add(want)) {
			t.Fatalf("remote ask %d: deadline = %v %v", i, d, ok)
		}
		m.Reply(far(1), nil, nil)
	}
	if err := <-asked; err != nil {
		t.Fatal(err)
	}

	// What the receiver sees, before it replies.
	type seen struct {
		d  time.Time
		ok bool
	}
	got := make(chan seen, 4)
	pid, _ := n.Spawn(behaviorFunc(func(c Context, m Message) {
		d, ok := m.Deadline()
		got <- seen{d, ok}
		if m.CanReply() {
			c.Reply(&m, nil, nil)
		}
	}), SpawnOptions{})
	defer n.Kill(pid)
	if _, _, err := n.Ask(pid, Message{}, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.ok {
		t.Fatal("a local ask paid for a deadline")
	}
	c := NewCall()
	_ = n.Send(pid, c.MessageWithin(Message{}, time.Minute))
	if _, err := c.Wait(time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if s := <-got; !s.ok || time.Until(s.d) < 50*time.Second {
		t.Fatalf("call deadline = %v %v", s.d, s.ok)
	}
	_ = n.Send(pid, Message{})
	if s := <-got; s.ok {
		t.Fatal("a tell has a deadline")
	}
	at := time.Now().Add(time.Hour)
	m := Message{}.WithReplyDeadline(c.r, 1, at)
	if d, ok := m.Deadline(); !ok || !d.Equal(at) {
		t.Fatalf("explicit deadline = %v, want %v", d, at)
	}
	// A call that is over reports its deadline as past, even once its
	// pooled reference serves another call.
	c = NewCall()
	over := c.MessageWithin(Message{}, time.Hour)
	c.Abandon(nil)
	next := NewCall()
	_ = next.MessageWithin(Message{}, time.Hour)
	if d, ok := over.Deadline(); !ok || d.After(time.Now()) {
		t.Fatalf("deadline of a call that is over = %v %v", d, ok)
	}
	next.Abandon(nil)
}

// Creations differ between nodes made in the same second, and in the
// same millisecond.
func TestCreationsDiffer(t *testing.T) {
	seen := map[uint32]bool{}
	for range 1000 {
		c := NewNode(Options{Name: "same"}).Creation()
		if c == 0 || seen[c] {
			t.Fatalf("creation %d repeated or zero", c)
		}
		seen[c] = true
	}
	now := time.Now()
	a, b := newCreation(now), newCreation(now)
	if a == b {
		t.Fatalf("two nodes started at one instant share creation %d", a)
	}
	if got := NewNode(Options{Creation: 7}).Creation(); got != 7 {
		t.Fatalf("explicit creation = %d", got)
	}
}

// docs/process-core.md lists every code of the process core: the codes are
// part of the wire format.
func TestErrorCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/process-core.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, code := range value.Codes() {
		if !strings.HasPrefix(code, "process.") {
			continue
		}
		n++
		if !strings.Contains(string(doc), "`"+code+"`") {
			t.Errorf("docs/process-core.md does not list %s", code)
		}
	}
	if n < 16 {
		t.Fatalf("only %d process codes registered", n)
	}
}

func TestSplitNodeName(t *testing.T) {
	for _, c := range []struct {
		dest, name, node string
		ok               bool
	}{
		{"svc@n2", "svc", "n2", true},
		{"a@b@n3", "a@b", "n3", true},
		{"svc", "", "", false},
		{"@n2", "", "", false},
		{"svc@", "", "", false},
		{"<n1.1.2>", "", "", false},
	} {
		name, node, ok := SplitNodeName(c.dest)
		if name != c.name || node != c.node || ok != c.ok {
			t.Errorf("%q: %q %q %v", c.dest, name, node, ok)
		}
	}
}

// name@node resolves on that node, through the transport's Whereis; on
// this node it is the local name.
func TestResolveNameAtNode(t *testing.T) {
	n, f := newRemoteTestNode(t)
	f.where = map[string]PID{"svc@far": far(9)}
	local, _ := n.SpawnFunc(func(p *Proc) (any, error) { <-p.Context().Done(); return nil, nil }, SpawnOptions{})
	defer n.Kill(local)
	if err := n.Register("here", local); err != nil {
		t.Fatal(err)
	}
	if err := n.Register("a@b", local); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("register a@b: %v", err)
	}
	if pid, err := n.Resolve("here@" + n.Name()); err != nil || pid != local {
		t.Fatalf("local name@node: %v %v", pid, err)
	}
	if pid, err := n.Resolve("svc@far"); err != nil || pid != far(9) {
		t.Fatalf("svc@far: %v %v", pid, err)
	}
	if _, err := n.Resolve("nobody@far"); !errors.Is(err, ErrNameNotFound) {
		t.Fatalf("nobody@far: %v", err)
	}
	f.err = ErrUnreachable
	if _, err := n.Resolve("svc@far"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("unreachable: %v", err)
	}
	n.SetTransport(nil)
	if _, err := n.Resolve("svc@far"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("no transport: %v", err)
	}
}
