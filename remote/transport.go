package remote

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote/wire"
	"github.com/proctor-run/proctor/value"
)

// Options configure a Transport. The zero value is usable.
type Options struct {
	// Logger receives the transport's diagnostics (malformed and forged
	// frames, signals that could not be sent). Default: slog.Default().
	Logger *slog.Logger
	// ReplyTimeout is how long a reply is awaited for an ask whose
	// message names no deadline (Message.Deadline): one that a process of
	// this node received from Ask or AskFunc, which name none for a local
	// process, and hands on, or one made with Call.Message. Asks made
	// for another node carry theirs. Default: one minute, so that a reply
	// to a long ask is not dropped; the table holds an unanswered entry
	// that long at most.
	ReplyTimeout time.Duration
	// MaxPending bounds the asks awaiting replies from other nodes; an ask
	// past it fails at once with ErrTooManyPending. Default: 1<<20.
	MaxPending int
}

// Transport implements process.Transport over a Network, and is the
// Network's Receiver: it encodes each outgoing signal as a wire envelope
// and hands each incoming one to the node's Inbound.
type Transport struct {
	node *process.Node
	in   process.Inbound
	net  Network
	log  *slog.Logger
	opts Options

	pending  pendingTable
	limit    logging.Limiter // refused frames are logged at most so often per node
	maxFrame int             // the network's bound on a frame (FrameLimiter); MaxInt for none

	sent, received, late, refused, undelivered atomic.Uint64
	closeOnce                                  sync.Once
}

var (
	_ process.Transport = (*Transport)(nil)
	_ process.Resolver  = (*Transport)(nil)
	_ Receiver          = (*Transport)(nil)
)

// New starts a transport for node over net and installs it on the node
// (Node.SetTransport). Close undoes both.
func New(node *process.Node, net Network, opts Options) (*Transport, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ReplyTimeout <= 0 {
		opts.ReplyTimeout = time.Minute
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 1 << 20
	}
	t := &Transport{node: node, in: node.Inbound(), net: net, log: opts.Logger, opts: opts, maxFrame: math.MaxInt}
	if fl, ok := net.(FrameLimiter); ok && fl.MaxFrame() > 0 {
		t.maxFrame = fl.MaxFrame()
	}
	t.pending.init(opts.MaxPending)
	if err := net.Start(t); err != nil {
		t.pending.close()
		return nil, fmt.Errorf("remote transport of %s: %w", node.Name(), err)
	}
	node.SetTransport(t)
	return t, nil
}

// Close removes the transport from its node, which fires every link and
// monitor with a remote process with process.ErrNoConnection, leaves the
// network, and fails the asks still awaiting replies with
// process.ErrNoConnection.
func (t *Transport) Close() error {
	var err error
	t.closeOnce.Do(func() {
		t.node.SetTransport(nil)
		err = t.net.Close()
		t.pending.close()
		t.pending.fail("", fmt.Errorf("transport closed: %w", process.ErrNoConnection))
	})
	return err
}

// Stats are a transport's counters.
type Stats struct {
	// Pending is the number of asks awaiting a reply from another node.
	Pending int `json:"pending"`
	// Sent and Received count envelopes.
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	// Expired counts asks dropped from the table at their deadline.
	Expired uint64 `json:"expired"`
	// LateReplies counts replies that found no pending ask: it expired,
	// or its node had been reported down.
	LateReplies uint64 `json:"late_replies"`
	// Refused counts frames refused as malformed or forged.
	Refused uint64 `json:"refused"`
	// Undelivered counts signals that arrived for a process that is gone
	// (an ask among them is answered with process.ErrNoProcess).
	Undelivered uint64 `json:"undelivered"`
}

// Stats returns the transport's counters.
func (t *Transport) Stats() Stats {
	p, exp := t.pending.counts()
	return Stats{
		Pending: p, Expired: exp,
		Sent: t.sent.Load(), Received: t.received.Load(),
		LateReplies: t.late.Load(), Refused: t.refused.Load(), Undelivered: t.undelivered.Load(),
	}
}

// send encodes e and hands it to the network for node. An envelope larger
// than the network's frames fails with value.ErrTooLarge as its encoding
// passes the bound.
func (t *Transport) send(node string, e *wire.Envelope) error {
	size := 64 + len(e.Topic)
	if b, ok := wire.PayloadBytes(e.Payload); ok {
		size += len(b)
	}
	buf := frameBuf(size)
	frame, err := wire.EncodeLimit(buf, e, t.maxFrame)
	if err != nil || cap(frame) != cap(buf) {
		ReleaseFrame(buf) // not sent, or outgrown: nobody holds it
	}
	if err != nil {
		return err
	}
	// Counted first: the frame may be received, and answered, before
	// Send returns.
	t.sent.Add(1)
	if err := t.net.Send(node, frame); err != nil {
		t.sent.Add(^uint64(0))
		return err
	}
	return nil
}

// signal sends a signal that has no one to report a failure to.
func (t *Transport) signal(e *wire.Envelope) {
	if err := t.send(e.To.Node, e); err != nil {
		t.log.Debug("remote signal not sent", "signal", e.Signal.String(), "from", e.From.String(), "to", e.To.String(), "error", err)
	}
}

// Send implements process.Transport.
func (t *Transport) Send(to process.PID, m process.Message) error {
	return t.sendSignal(wire.Send, to, "", m)
}

// SendName implements process.Transport.
func (t *Transport) SendName(node, name string, m process.Message) error {
	return t.sendSignal(wire.Send, process.PID{Node: node}, name, m)
}

// Whereis implements process.Resolver.
func (t *Transport) Whereis(node, name string, m process.Message) error {
	if target, _ := m.ReplyTarget(); target == nil {
		return fmt.Errorf("whereis %s@%s: %w", name, node, process.ErrNoReplyTarget)
	}
	return t.sendSignal(wire.Whereis, process.PID{Node: node}, name, m)
}

// sendSignal sends m as a Send or a Whereis to to, or to the process
// registered as name on to's node; an ask's reply target waits in the
// pending table.
func (t *Transport) sendSignal(sig wire.Signal, to process.PID, name string, m process.Message) error {
	e := wire.Envelope{Signal: sig, From: m.From, To: to, Name: name, Topic: m.Topic, Payload: m.Payload}
	// A message from a process of another node is handed on (a router
	// forwarding a remote caller's ask): marked relayed, so the receiver
	// takes its From as the original sender and nothing more.
	e.Relayed = sig == wire.Send && !m.From.IsZero() && m.From.Node != t.node.Name()
	target, tok := m.ReplyTarget()
	if target != nil {
		deadline, ok := m.Deadline()
		if !ok {
			deadline = time.Now().Add(t.opts.ReplyTimeout)
		}
		ttl := time.Until(deadline)
		if ttl <= 0 {
			return fmt.Errorf("send to %s: %w: the deadline has passed", to, process.ErrTimeout)
		}
		token, err := t.pending.add(to.Node, target, tok, deadline)
		if err != nil {
			return fmt.Errorf("send to %s: %w", to, err)
		}
		e.Token, e.TTL = token, ttl
	}
	if err := t.send(to.Node, &e); err != nil {
		if e.Token != 0 {
			t.pending.drop(e.Token)
		}
		if cannotCross(err) {
			return err // the encoder's error names the destination as addressed
		}
		if name != "" {
			return fmt.Errorf("send to %s@%s: %w", name, to.Node, err)
		}
		return fmt.Errorf("send to %s: %w", to, err)
	}
	return nil
}

// Exit implements process.Transport.
func (t *Transport) Exit(from, to process.PID, reason error) error {
	return t.send(to.Node, &wire.Envelope{Signal: wire.Exit, From: from, To: to, Err: reason})
}

// Kill implements process.Transport.
func (t *Transport) Kill(from, to process.PID) error {
	return t.send(to.Node, &wire.Envelope{Signal: wire.Kill, From: from, To: to})
}

// Monitor implements process.Transport.
func (t *Transport) Monitor(from, to process.PID) error {
	return t.send(to.Node, &wire.Envelope{Signal: wire.Monitor, From: from, To: to})
}

// Demonitor implements process.Transport.
func (t *Transport) Demonitor(from, to process.PID) {
	t.signal(&wire.Envelope{Signal: wire.Demonitor, From: from, To: to})
}

// Link implements process.Transport.
func (t *Transport) Link(from, to process.PID) error {
	return t.send(to.Node, &wire.Envelope{Signal: wire.Link, From: from, To: to})
}

// Unlink implements process.Transport.
func (t *Transport) Unlink(from, to process.PID) {
	t.signal(&wire.Envelope{Signal: wire.Unlink, From: from, To: to})
}

// LinkExit implements process.Transport.
func (t *Transport) LinkExit(from, to process.PID, e process.Exit) {
	t.exitSignal(wire.LinkExit, from, to, e)
}

// MonitorExit implements process.Transport.
func (t *Transport) MonitorExit(from, to process.PID, e process.Exit) {
	t.exitSignal(wire.MonitorExit, from, to, e)
}

// exitSignal sends an exit to a remote link or watcher. An exit value that
// cannot cross a node (it is not a value of the value model, or too large
// for a frame) is left out: the exit itself must arrive.
func (t *Transport) exitSignal(s wire.Signal, from, to process.PID, x process.Exit) {
	e := wire.Envelope{Signal: s, From: from, To: to, Payload: x.Value, Err: x.Err}
	err := t.send(to.Node, &e)
	if err != nil && x.Value != nil && cannotCross(err) {
		e.Payload = nil
		err = t.send(to.Node, &e)
	}
	if err != nil {
		t.log.Debug("remote exit not sent", "signal", s.String(), "from", from.String(), "to", to.String(), "error", err)
	}
}

// cannotCross reports whether err says a value cannot be sent to another
// node at all: it is not a value of the value model, or it is too large.
func cannotCross(err error) bool {
	return value.KindOf(err) == value.KindInvalid || errors.Is(err, value.ErrTooLarge)
}

// Receive implements Receiver: it decodes frame, checks that it names only
// processes node may speak for, and delivers it.
func (t *Transport) Receive(node string, frame []byte) error {
	e, err := wire.Decode(frame)
	if err != nil {
		t.refused.Add(1)
		t.limit.Log(t.log, slog.LevelWarn, "node", node, "remote frame refused", "node", node, "error", err)
		return fmt.Errorf("frame from %s: %w", node, err)
	}
	if err := t.check(node, &e); err != nil {
		t.refused.Add(1)
		t.limit.Log(t.log, slog.LevelWarn, "node", node, "remote frame refused", "node", node, "signal", e.Signal.String(), "error", err)
		return err
	}
	t.received.Add(1)
	switch e.Signal {
	case wire.Send:
		m := process.Message{From: e.From, Topic: e.Topic, Payload: e.Payload}
		if e.Token != 0 {
			ttl := e.TTL
			if ttl == 0 {
				ttl = t.opts.ReplyTimeout
			}
			deadline := time.Now().Add(ttl)
			r := &remoteReply{t: t, peer: node, token: e.Token, deadline: deadline}
			m = m.WithReply(r, e.Token)
		}
		var err error
		if e.Name != "" {
			err = t.in.SendName(e.Name, m)
		} else {
			err = t.in.Send(e.To, m)
		}
		if err != nil {
			t.undelivered.Add(1)
		}
	case wire.Whereis:
		t.whereis(node, &e)
	case wire.Reply:
		target, tok, ok := t.pending.take(e.Token, node)
		if !ok {
			// The ask ended (its deadline passed, or its asker gave up)
			// before the reply crossed: a dead letter, as a late local
			// reply is. The pending entry is gone, so the asker is known
			// only by its token.
			t.late.Add(1)
			t.node.DeadLetter(process.DeadLetter{From: e.From, To: fmt.Sprintf("ask #%d", e.Token), Reason: process.DeadLateReply})
			return nil
		}
		target.Settle(tok, e.From, e.Payload, e.Err)
	case wire.Exit:
		t.applied(&e, t.in.Exit(e.From, e.To, e.Err))
	case wire.Kill:
		t.applied(&e, t.in.Kill(e.From, e.To))
	case wire.Link, wire.Unlink, wire.Monitor, wire.Demonitor:
		relations[e.Signal](t.in, e.From, e.To)
	case wire.LinkExit, wire.MonitorExit:
		exits[e.Signal](t.in, e.From, e.To, process.Exit{Value: e.Payload, Err: e.Err})
	}
	return nil
}

// whereis answers a peer's Whereis with the process registered under the
// name, or process.ErrNameNotFound. Nothing is sent once the asker has
// stopped waiting.
func (t *Transport) whereis(node string, e *wire.Envelope) {
	reply := wire.Envelope{Signal: wire.Reply, Token: e.Token}
	if pid, ok := t.node.Whereis(e.Name); ok {
		reply.From = pid
	} else {
		reply.Err = fmt.Errorf("%q on node %s: %w", e.Name, t.node.Name(), process.ErrNameNotFound)
	}
	if err := t.send(node, &reply); err != nil {
		t.log.Debug("remote whereis reply not sent", "node", node, "name", e.Name, "error", err)
	}
}

// The Inbound method of each relation signal.
var (
	relations = map[wire.Signal]func(process.Inbound, process.PID, process.PID){
		wire.Link: process.Inbound.Link, wire.Unlink: process.Inbound.Unlink,
		wire.Monitor: process.Inbound.Monitor, wire.Demonitor: process.Inbound.Demonitor,
	}
	exits = map[wire.Signal]func(process.Inbound, process.PID, process.PID, process.Exit){
		wire.LinkExit: process.Inbound.LinkExit, wire.MonitorExit: process.Inbound.MonitorExit,
	}
)

// applied counts and logs a stop request the node did not apply (its
// process is gone, or it refused).
func (t *Transport) applied(e *wire.Envelope, err error) {
	if err != nil {
		t.undelivered.Add(1)
		t.log.Debug("remote stop request not applied", "signal", e.Signal.String(), "from", e.From.String(), "to", e.To.String(), "error", err)
	}
}

// check refuses an envelope that names a process its sender does not own
// as the sender, or that is not addressed to this node.
func (t *Transport) check(node string, e *wire.Envelope) error {
	if e.Signal == wire.Reply {
		// A reply's From is whom the reply is attributed to, not its
		// sender: an ask relayed by a router on node to a routee on a
		// third node comes back from node attributed to the routee. Only
		// the node the ask went to can settle it (pending.take).
		if e.Token == 0 {
			return fmt.Errorf("%w: reply without a token", ErrForged)
		}
		return nil
	}
	// From is the sending process: node's own, or nobody where a signal
	// allows it (a message or stop request from outside any process).
	switch {
	case e.From.IsZero():
		switch e.Signal {
		case wire.Send, wire.Exit, wire.Kill, wire.Whereis:
		default:
			return fmt.Errorf("%w: %s from no process", ErrForged, e.Signal)
		}
	case e.From.Node != node && !e.Relayed:
		// A relayed Send (the only signal the decoder lets be relayed)
		// may name another node's process: a message handed on is
		// information, as in Erlang; every signal that acts for a
		// process (exit, kill, link, monitor) comes from its own node.
		return fmt.Errorf("%w: %s from %s sent by node %q", ErrForged, e.Signal, e.From, node)
	}
	if e.To.Node != t.node.Name() {
		return fmt.Errorf("%w: %s to %s is not for node %q", ErrForged, e.Signal, e.To, t.node.Name())
	}
	return nil
}

// NodeDown implements Receiver: the asks awaiting replies from node fail
// with process.ErrNoConnection, and every link and monitor with its
// processes fires with it.
func (t *Transport) NodeDown(node string) {
	t.pending.fail(node, fmt.Errorf("node %s down: %w", node, process.ErrNoConnection))
	t.in.NodeDown(node)
}

// remoteReply is the reply target of an ask that came from another node:
// settling it sends the Reply back. It is one-shot, and a reply after the
// asker's deadline is not sent (the asker has stopped waiting).
type remoteReply struct {
	t        *Transport
	peer     string
	token    uint64
	deadline time.Time
	done     atomic.Bool
}

// ReplyDeadline implements process.Deadliner: the asker's deadline, as
// the envelope's ttl told it.
func (r *remoteReply) ReplyDeadline(uint64) (time.Time, bool) { return r.deadline, true }

func (r *remoteReply) Settle(_ uint64, from process.PID, v any, err error) bool {
	if !r.done.CompareAndSwap(false, true) || time.Now().After(r.deadline) {
		return false
	}
	e := wire.Envelope{Signal: wire.Reply, From: from, Token: r.token, Payload: v, Err: err}
	serr := r.t.send(r.peer, &e)
	if serr != nil && cannotCross(serr) {
		// The reply cannot cross (not a value of the value model, or too
		// large): the asker learns why now rather than at its deadline.
		e.Payload, e.Err = nil, fmt.Errorf("reply from %s: %w", from, serr)
		serr = r.t.send(r.peer, &e)
	}
	if serr != nil {
		r.t.log.Debug("remote reply not sent", "node", r.peer, "from", from.String(), "error", serr)
		return false
	}
	return true
}
