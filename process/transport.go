package process

import "fmt"

// Transport carries what the process core addresses to PIDs of other
// nodes: the sending half of the seam. The cluster layer implements it and
// installs it with Node.SetTransport; the core never imports the cluster
// layer. Its peer on the receiving node hands each signal to that node's
// Inbound.
//
// In every method from is a process of this node (or the zero PID where
// noted) and to a process of another node. Every method must return
// promptly: a node that is down or unknown is an error wrapping
// ErrUnreachable, a full send queue an error of kind limit, never a wait.
// Signals from one process to one node must arrive in the order they were
// given; that order is what makes a dying process's link signals arrive
// before its monitors' EXITs, and a message sent before an exit arrive
// before the exit.
type Transport interface {
	// Send delivers m to remote process to. When m can be replied to, the
	// transport keeps its ReplyTarget and token until the reply returns,
	// the deadline of m passes (Message.Deadline; a default of the
	// transport's when it names none), or the node goes down, which
	// settles it with ErrNoConnection.
	Send(to PID, m Message) error
	// SendName delivers m to the process registered as name on node,
	// Erlang's {Name, Node} ! Msg: the name is resolved there, on
	// arrival. Replies are kept as for Send.
	SendName(node, name string, m Message) error
	// Exit asks remote process to to stop with reason, on behalf of from
	// (zero for the runtime itself). The far node applies it as
	// TerminateFrom does: a system process refuses unless from is its
	// parent.
	Exit(from, to PID, reason error) error
	// Kill ends remote process to at once with ErrKilled, on behalf of
	// from (zero for the runtime itself); refused like Exit.
	Kill(from, to PID) error
	// Monitor makes local watcher from receive an EXIT event when remote
	// target to exits. The event arrives as Inbound.MonitorExit on this
	// node; a target that is already gone reports ErrNoProcess that way.
	Monitor(from, to PID) error
	// Demonitor undoes Monitor.
	Demonitor(from, to PID)
	// MonitorExit tells remote watcher to that local target from, which it
	// monitors, exited with e.
	MonitorExit(from, to PID, e Exit)
	// Link links local from to remote to. The far side records the link
	// without signalling back; a to that is already gone answers with a
	// LinkExit of ErrNoProcess.
	Link(from, to PID) error
	// Unlink removes the link between local from and remote to.
	Unlink(from, to PID)
	// LinkExit tells remote to that local from, linked to it, exited
	// with e (sent for normal exits too: the far side drops the link).
	LinkExit(from, to PID, e Exit)
}

// Resolver is what a Transport implements to resolve name@node for
// Node.Resolve: without it, a name on another node can still be sent to
// (SendName) but not resolved to a PID.
type Resolver interface {
	// Whereis asks node which process is registered as name there. m is
	// an ask (Call.MessageWithin) whose reply target the answer settles:
	// the process as the reply's From, or ErrNameNotFound. Replies are
	// kept as for Send.
	Whereis(node, name string, m Message) error
}

// Inbound is the receiving half of the seam: what a transport calls on its
// node for each signal a peer sends. Node.Inbound returns it. In every
// method from is the process of the sending node and to the process of
// this node; a to that is not a live local process is ignored (or, where
// the signal expects an answer, answered as a local call would be), and so
// is a relation signal whose from claims to be local. The transport checks
// that from belongs to the node the signal came from.
// Nothing an Inbound method does is sent back out through the transport
// unless the signal expects an answer: an incoming link is recorded, not
// echoed.
//
// The methods never block, so a transport may call them on the goroutine
// that reads its connection.
type Inbound interface {
	// Send delivers m to local process to. When delivery fails and m can
	// be replied to, the ask is rejected with the error (ErrNoProcess,
	// ErrMailboxFull), as a local ask would fail at once.
	Send(to PID, m Message) error
	// SendName delivers m to the local process registered as name; an
	// unknown name is ErrNameNotFound, and an ask to it is rejected with
	// that error.
	SendName(name string, m Message) error
	// Exit is a stop request from remote from, applied as TerminateFrom:
	// a system process refuses (ErrSystemProcess) unless from is its
	// parent.
	Exit(from, to PID, reason error) error
	// Kill ends local process to at once with ErrKilled, refused like Exit.
	Kill(from, to PID) error
	// Monitor makes remote watcher from monitor local target to. A target
	// that is already gone answers with a MonitorExit of ErrNoProcess.
	Monitor(from, to PID)
	// Demonitor undoes Monitor.
	Demonitor(from, to PID)
	// MonitorExit delivers the exit of remote target from to local
	// watcher to, as an EXIT event, if to still monitors from.
	MonitorExit(from, to PID, e Exit)
	// Link records a link between remote from and local to. A to that is
	// already gone answers with a LinkExit of ErrNoProcess.
	Link(from, to PID)
	// Unlink removes the link between remote from and local to.
	Unlink(from, to PID)
	// LinkExit delivers the exit of remote from to local to linked to it:
	// it stops to with a *LinkError, or is a LINK_DOWN event when to traps
	// links; a normal exit only drops the link.
	LinkExit(from, to PID, e Exit)
	// NodeDown reports that node is gone. Every link and monitor between
	// a local process and a process of node fires with ErrNoConnection
	// (links first), and node's monitors of local processes are dropped.
	// The transport calls it after the last signal it delivers from node.
	NodeDown(node string)
}

// Inbound returns the receiving half of the seam for a transport to
// deliver what peers send.
func (n *Node) Inbound() Inbound { return inbound{n} }

// inbound implements Inbound. It is a type of its own, not methods of
// Node, because its methods share names with Node's but never route to the
// transport: a signal that came in must not go back out.
type inbound struct{ n *Node }

func (in inbound) Send(to PID, m Message) error {
	var err error = ErrNoProcess
	if p := in.n.lookup(to); p != nil {
		err = p.deliver(&m)
	}
	if err != nil {
		in.n.undelivered(to.String(), &m, err)
	}
	return rejectOnFailure(&m, err)
}

func (in inbound) SendName(name string, m Message) error {
	to, ok := in.n.Whereis(name)
	if !ok {
		in.n.undelivered(name, &m, ErrNameNotFound)
		// The remote asker's error names the name and the node, as a
		// local one's names the name ("app:x": no process registered…).
		return rejectOnFailure(&m, fmt.Errorf("%q on node %s: %w", name, in.n.name, ErrNameNotFound))
	}
	return in.Send(to, m)
}

// rejectOnFailure rejects the ask m with err, when delivery failed: a
// remote asker learns at once, as a local one does from Send's error.
func rejectOnFailure(m *Message, err error) error {
	if err != nil && m.reply != nil {
		m.reply.target.Settle(m.reply.token, PID{}, nil, err)
	}
	return err
}

func (in inbound) Exit(from, to PID, reason error) error {
	p := in.n.lookup(to)
	if p == nil {
		return ErrNoProcess
	}
	if p.refuses(in.caller(from)) {
		return ErrSystemProcess
	}
	if reason == nil {
		reason = ErrShutdown
	}
	p.requestStop(reason)
	return nil
}

func (in inbound) Kill(from, to PID) error {
	p := in.n.lookup(to)
	if p == nil {
		return ErrNoProcess
	}
	if p.refuses(in.caller(from)) {
		return ErrSystemProcess
	}
	p.finish(Exit{Err: ErrKilled})
	return nil
}

// caller is the from of a remote stop request as the refusal check sees
// it: a from that claims to be local is nobody.
func (in inbound) caller(from PID) PID {
	if in.n.isRemote(from) {
		return from
	}
	return PID{}
}

func (in inbound) Monitor(from, to PID) {
	in.accept(from, to, in.n.addMonitor, Transport.MonitorExit)
}

// accept records an incoming link or monitor of local to by remote from
// with add, or, when to is gone, answers from with an exit of
// ErrNoProcess through the transport.
func (in inbound) accept(from, to PID, add func(*process, PID) bool, answer func(Transport, PID, PID, Exit)) {
	n := in.n
	if !n.isRemote(from) || from.IsZero() || n.isRemote(to) {
		return // not a signal between a remote and a local process
	}
	if p := n.lookup(to); p != nil && add(p, from) {
		return
	}
	if t := n.remote(); t != nil {
		answer(t, to, from, Exit{Err: ErrNoProcess})
	}
}

func (in inbound) Demonitor(from, to PID) {
	if !in.n.isRemote(from) {
		return
	}
	if tp := in.n.lookup(to); tp != nil {
		tp.mu.Lock()
		if x := tp.ext.Load(); x != nil {
			delete(x.monitors, from)
		}
		tp.mu.Unlock()
	}
}

func (in inbound) MonitorExit(from, to PID, e Exit) {
	w := in.n.lookup(to)
	if w == nil || !in.n.isRemote(from) {
		return
	}
	w.mu.Lock()
	watching := false
	if x := w.ext.Load(); x != nil {
		if _, watching = x.watching[from]; watching {
			delete(x.watching, from)
		}
	}
	w.mu.Unlock()
	if watching {
		w.deliverEvent(Event{Kind: EventExit, From: from, Exit: e})
	}
}

func (in inbound) Link(from, to PID) {
	in.accept(from, to, in.n.addLink, Transport.LinkExit)
}

func (in inbound) Unlink(from, to PID) {
	if p := in.n.lookup(to); p != nil && in.n.isRemote(from) {
		removeLink(p, from)
	}
}

func (in inbound) LinkExit(from, to PID, e Exit) {
	if in.n.IsLocal(to) && in.n.isRemote(from) {
		in.n.linkExit(to, from, e)
	}
}

func (in inbound) NodeDown(node string) { in.n.nodeDown(node) }
