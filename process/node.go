package process

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Node. The zero value is usable.
type Options struct {
	// Name is the node's name, carried by every PID it issues.
	// Default: the host name, or "local" when it cannot be read.
	Name string
	// Creation tells this incarnation of the node from earlier ones, so a
	// PID kept from before a restart never reaches a process of the new
	// incarnation. Default: the start time in milliseconds (modulo 2^32),
	// raised when needed so that every node made in one program gets a
	// larger one than the last: two restarts in the same second differ.
	Creation uint32
	// Logger receives the node's own diagnostics. Default: slog.Default().
	Logger *slog.Logger
	// AbandonAfter is how long a killed goroutine process's function may
	// take to return before the process is reported abandoned (see
	// Abandoned). Default: DefaultAbandonAfter.
	AbandonAfter time.Duration
	// DeadLetters receives the messages that reach no one (see
	// DeadLetter). Default: none; they are only errors to their senders.
	DeadLetters DeadLetterSink
	// MaxProcesses bounds the live processes of the node: a spawn past it
	// fails with ErrTooManyProcesses, so a script spawning in a loop gets
	// an error instead of taking the node's memory. Default:
	// DefaultMaxProcesses; negative: no limit.
	MaxProcesses int
}

// DefaultMaxProcesses is the default of Options.MaxProcesses: 2,000,000,
// room for a million idle Lua processes (about 12 KB each) and the
// runtime's own, while a runaway spawn loop stops at about 25 GB of idle
// Lua processes rather than at the node's death.
const DefaultMaxProcesses = 2_000_000

// Node is the local runtime: it issues PIDs, holds the process table and
// the registered names, and routes to other nodes through a Transport.
type Node struct {
	name     string
	creation uint32
	log      *slog.Logger

	nextID atomic.Uint64
	live   atomic.Int64
	procs  table
	names  sync.Map // string -> PID

	transport atomic.Pointer[transportBox]

	abandonAfter   time.Duration
	abandonTotal   atomic.Int64
	abandonRunning atomic.Int64

	deadLetters DeadLetterSink
	maxProcs    int64        // Options.MaxProcesses; 0: no limit
	retiredHW   atomic.Int64 // the highest mailbox high-water mark of an exited process

	anonMeta atomic.Pointer[meta] // the meta of the last tell with no sender (see meta)

	// rel indexes, per remote node, the local processes that hold (or
	// held) a link or monitor with one of its processes, so a node going
	// down visits only those. A process leaves it when it exits.
	relMu sync.Mutex
	rel   map[string]map[PID]struct{}

	// Every send reads the node (its name, its table, anonMeta): its size,
	// 256 bytes, is a size class whose objects are 256-byte aligned, so it
	// shares no cache line, nor an aligned pair of them, with an object
	// that another goroutine writes (see directory).
	_ [56]byte
}

type transportBox struct{ t Transport }

// NewNode returns a node with no processes.
func NewNode(opts Options) *Node {
	n := &Node{name: opts.Name, creation: opts.Creation, log: opts.Logger, abandonAfter: opts.AbandonAfter, deadLetters: opts.DeadLetters}
	if n.abandonAfter <= 0 {
		n.abandonAfter = DefaultAbandonAfter
	}
	switch {
	case opts.MaxProcesses == 0:
		n.maxProcs = DefaultMaxProcesses
	case opts.MaxProcesses > 0:
		n.maxProcs = int64(opts.MaxProcesses)
	}
	if n.name == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "local"
		}
		n.name = h
	}
	if n.creation == 0 {
		n.creation = newCreation(time.Now())
	}
	if n.log == nil {
		n.log = slog.Default()
	}
	return n
}

// Name returns the node's name.
func (n *Node) Name() string { return n.name }

// Count returns the number of live processes.
func (n *Node) Count() int { return int(n.live.Load()) }

// MaxProcesses returns the most live processes the node allows, 0 for no
// limit (Options.MaxProcesses).
func (n *Node) MaxProcesses() int { return int(n.maxProcs) }

// IsLocal reports whether pid belongs to this incarnation of this node.
func (n *Node) IsLocal(pid PID) bool { return pid.Node == n.name && pid.Creation == n.creation }

// lastCreation is the creation most recently given by default.
var lastCreation atomic.Uint32

// newCreation returns a default creation for a node started at now: its
// millisecond clock, or one more than the last one given in this program
// when the clock has not moved on. Never 0.
func newCreation(now time.Time) uint32 {
	c := uint32(now.UnixMilli())
	for {
		last := lastCreation.Load()
		next := c
		if next <= last && last-next < 1<<31 {
			next = last + 1
		}
		if next == 0 {
			next = 1
		}
		if lastCreation.CompareAndSwap(last, next) {
			return next
		}
	}
}

// Creation returns the node's creation: its incarnation, part of every
// PID it issues.
func (n *Node) Creation() uint32 { return n.creation }

// SetTransport installs the route to other nodes. A nil t removes it,
// which disconnects every node: each link and monitor with a remote
// process fires with ErrNoConnection, as Inbound.NodeDown does, since
// nothing will ever report their exits. Replacing one transport by
// another keeps them (the new one serves the same peers).
func (n *Node) SetTransport(t Transport) {
	if t != nil {
		n.transport.Store(&transportBox{t})
		return
	}
	if n.transport.Swap(nil) == nil {
		return
	}
	n.relMu.Lock()
	nodes := make([]string, 0, len(n.rel))
	for node := range n.rel {
		nodes = append(nodes, node)
	}
	n.relMu.Unlock()
	for _, node := range nodes {
		n.nodeDown(node)
	}
}

func (n *Node) remote() Transport {
	if b := n.transport.Load(); b != nil {
		return b.t
	}
	return nil
}

// isRemote reports whether pid names a process of another node; a PID of
// an earlier incarnation of this node is not remote, only gone.
func (n *Node) isRemote(pid PID) bool { return pid.Node != n.name }

func (n *Node) lookup(pid PID) *process {
	if !n.IsLocal(pid) {
		return nil
	}
	return n.procs.load(pid.ID)
}

// Alive reports whether pid names a live local process. For a remote PID it
// reports false; ask the transport's membership instead.
func (n *Node) Alive(pid PID) bool {
	p := n.lookup(pid)
	return p != nil && !p.dead.Load()
}

// MailboxLen returns the number of messages waiting in a local process's
// mailbox, or -1 when there is no such process.
func (n *Node) MailboxLen(pid PID) int {
	p := n.lookup(pid)
	if p == nil {
		return -1
	}
	return p.mb.len()
}

// Send delivers m to the process named by to. It never blocks: a full
// bounded mailbox is ErrMailboxFull, a dead or unknown local PID is
// ErrNoProcess, a PID of an unreachable node is ErrUnreachable.
//
// A message that is not delivered is also reported as a dead letter
// (Options.DeadLetters); a delivered one costs nothing more.
func (n *Node) Send(to PID, m Message) error {
	if len(m.Topic) > MaxTopicSize {
		return CheckTopic("send to "+to.String(), m.Topic)
	}
	if to.Node == n.name {
		return n.sendLocal(to, "", &m)
	}
	if to.IsZero() {
		return n.undelivered("", &m, fmt.Errorf("send: %w: zero pid", ErrNoProcess))
	}
	t := n.remote()
	if t == nil {
		return n.undelivered(to.String(), &m, fmt.Errorf("send to %s: %w: no transport to node %q", to, ErrUnreachable, to.Node))
	}
	if err := t.Send(to, m); err != nil {
		return n.undelivered(to.String(), &m, err)
	}
	return nil
}

// sendLocal delivers m to to, a PID of this node; errors and dead letters
// name the destination as the sender addressed it: by name, the name it
// was resolved from, else the PID (formatted only on failure: a send
// that succeeds allocates nothing). It takes the sender's message by
// pointer: a Message is passed in memory, not in registers, and a second
// 72-byte copy of the one the sender has just stored costs a tell more
// than the rest of the call.
func (n *Node) sendLocal(to PID, name string, m *Message) error {
	var p *process
	if to.Creation == n.creation {
		p = n.procs.load(to.ID)
	}
	if p == nil {
		return n.undeliveredTo(to, name, m, ErrNoProcess)
	}
	if err := p.deliver(m); err != nil {
		return n.undeliveredTo(to, name, m, err)
	}
	return nil
}

func (n *Node) undeliveredTo(to PID, name string, m *Message, err error) error {
	if name == "" {
		name = to.String()
	}
	return n.undelivered(name, m, fmt.Errorf("send to %s: %w", name, err))
}

// SendName delivers m to the process registered as name on node —
// Erlang's {Name, Node} ! Msg. On this node it is Whereis and Send (an
// unknown name is ErrNameNotFound); on another, the name is resolved
// there when the message arrives, so an unknown name drops a tell and
// rejects an ask with ErrNameNotFound.
func (n *Node) SendName(node, name string, m Message) error {
	if len(name) > MaxNameSize {
		return CheckName("send", name)
	}
	if len(m.Topic) > MaxTopicSize {
		return CheckTopic("send to "+name, m.Topic)
	}
	if node == n.name {
		to, ok := n.Whereis(name)
		if !ok {
			return n.undelivered(name, &m, fmt.Errorf("send to %s: %w", name, ErrNameNotFound))
		}
		return n.sendLocal(to, name, &m)
	}
	if node == "" || name == "" || IsPIDString(name) {
		return fmt.Errorf("send to %q@%q: %w", name, node, ErrInvalidName)
	}
	t := n.remote()
	if t == nil {
		return n.undelivered(name+"@"+node, &m, fmt.Errorf("send to %s@%s: %w: no transport to node %q", name, node, ErrUnreachable, node))
	}
	if err := t.SendName(node, name, m); err != nil {
		return n.undelivered(name+"@"+node, &m, err)
	}
	return nil
}

// Register names pid on this node. A name is held until it is unregistered
// or its process exits. A name may not be empty, start with '<' (the shape
// of a PID) or hold '@' (name@node addresses a name on a node).
func (n *Node) Register(name string, pid PID) error {
	if err := CheckName("register", name); err != nil {
		return err
	}
	if name == "" || IsPIDString(name) || strings.IndexByte(name, '@') >= 0 {
		return fmt.Errorf("register %q: %w", name, ErrInvalidName)
	}
	p := n.lookup(pid)
	if p == nil {
		return fmt.Errorf("register %q: %w", name, ErrNoProcess)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead.Load() {
		return fmt.Errorf("register %q: %w", name, ErrNoProcess)
	}
	if x := p.ext.Load(); x != nil && x.limits.MaxNames > 0 && len(x.names) >= x.limits.MaxNames && !slices.Contains(x.names, name) {
		return fmt.Errorf("register %q: %w: a process may hold at most %d names", name, ErrProcessLimit, x.limits.MaxNames)
	}
	if prev, loaded := n.names.LoadOrStore(name, pid); loaded {
		if prev.(PID) == pid {
			return nil
		}
		if n.Alive(prev.(PID)) {
			return fmt.Errorf("register %q: %w by %s", name, ErrNameTaken, prev.(PID))
		}
		if !n.names.CompareAndSwap(name, prev, pid) {
			return fmt.Errorf("register %q: %w", name, ErrNameTaken)
		}
	}
	x := p.extLocked()
	x.names = append(x.names, name)
	return nil
}

// Unregister releases name if pid holds it.
func (n *Node) Unregister(name string, pid PID) {
	if n.names.CompareAndDelete(name, pid) {
		if p := n.lookup(pid); p != nil {
			p.mu.Lock()
			if p.ext.Load() != nil {
				for i, nm := range p.ext.Load().names {
					if nm == name {
						p.ext.Load().names = append(p.ext.Load().names[:i], p.ext.Load().names[i+1:]...)
						break
					}
				}
			}
			p.mu.Unlock()
		}
	}
}

// Whereis returns the process registered under name.
func (n *Node) Whereis(name string) (PID, bool) {
	v, ok := n.names.Load(name)
	if !ok {
		return PID{}, false
	}
	return v.(PID), true
}

// Resolve turns a destination string into a PID: a PID string, a name
// registered on this node, or name@node — a name registered on another
// node (Erlang's {Name, Node}), looked up there with a round trip that
// waits at most DefaultAskTimeout. To send to a name on another node,
// SendName needs no round trip: the name is resolved on arrival.
func (n *Node) Resolve(dest string) (PID, error) {
	if err := CheckName("resolve", dest); err != nil {
		return PID{}, err
	}
	if IsPIDString(dest) {
		return ParsePID(dest)
	}
	if name, node, ok := SplitNodeName(dest); ok && node != n.name {
		return n.whereisRemote(node, name, DefaultAskTimeout)
	} else if ok {
		dest = name
	}
	if pid, ok := n.Whereis(dest); ok {
		return pid, nil
	}
	return PID{}, fmt.Errorf("%q: %w", dest, ErrNameNotFound)
}

// SplitNodeName splits a destination of the form name@node at its last
// '@'. ok is false for a PID string, or when either part would be empty.
// Registered names never hold '@', so name@node is never a local name.
func SplitNodeName(dest string) (name, node string, ok bool) {
	if IsPIDString(dest) {
		return "", "", false
	}
	i := strings.LastIndexByte(dest, '@')
	if i <= 0 || i == len(dest)-1 {
		return "", "", false
	}
	return dest[:i], dest[i+1:], true
}

// whereisRemote asks node for the process registered as name there.
func (n *Node) whereisRemote(node, name string, timeout time.Duration) (PID, error) {
	t, ok := n.remote().(Resolver)
	if !ok {
		return PID{}, fmt.Errorf("%s@%s: %w: no transport that resolves names on node %q", name, node, ErrUnreachable, node)
	}
	c := NewCall()
	r, err := Reply{}, t.Whereis(node, name, c.MessageWithin(Message{}, timeout))
	if err != nil {
		r, err = c.Abandon(err)
	} else {
		r, err = c.Wait(timeout, nil)
	}
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return PID{}, fmt.Errorf("%s@%s: %w", name, node, err)
	}
	return r.From, nil
}

// Terminate asks a process to stop; it exits with ErrShutdown once its code
// returns (a Behavior after its current message, a goroutine process when
// it sees its context cancelled). Use Kill when it does not stop in time.
// A remote process gets the request through the transport; its node
// applies it as TerminateFrom with no caller, so a system process there
// refuses it.
func (n *Node) Terminate(pid PID) error {
	return n.exitFrom(PID{}, pid, ErrShutdown, "terminate")
}

// Exit asks a process to stop with reason, as a link would; on another
// node, as Terminate does.
func (n *Node) Exit(pid PID, reason error) error {
	if reason == nil {
		reason = ErrShutdown
	}
	return n.exitFrom(PID{}, pid, reason, "exit")
}

// exitFrom asks pid to stop with reason on behalf of from: at once when it
// is local, through the transport otherwise.
func (n *Node) exitFrom(from, pid PID, reason error, op string) error {
	if n.isRemote(pid) {
		t := n.remote()
		if t == nil {
			return fmt.Errorf("%s %s: %w", op, pid, ErrUnreachable)
		}
		if err := t.Exit(from, pid, reason); err != nil {
			return fmt.Errorf("%s %s: %w", op, pid, err)
		}
		return nil
	}
	p := n.lookup(pid)
	if p == nil {
		return fmt.Errorf("%s %s: %w", op, pid, ErrNoProcess)
	}
	p.requestStop(reason)
	return nil
}

// Kill ends a process at once with ErrKilled: it is gone from the node, its
// monitors and links are told, and its goroutine (if it has one) is left to
// return on its own once it sees its context cancelled; one that has not
// returned Options.AbandonAfter later is reported abandoned (see
// Abandoned). A remote process is killed by its node, which refuses for a
// system process as Terminate does.
func (n *Node) Kill(pid PID) error {
	if n.isRemote(pid) {
		t := n.remote()
		if t == nil {
			return fmt.Errorf("kill %s: %w", pid, ErrUnreachable)
		}
		if err := t.Kill(PID{}, pid); err != nil {
			return fmt.Errorf("kill %s: %w", pid, err)
		}
		return nil
	}
	p := n.lookup(pid)
	if p == nil {
		return fmt.Errorf("kill %s: %w", pid, ErrNoProcess)
	}
	p.finish(Exit{Err: ErrKilled})
	n.watchAbandon(p)
	return nil
}

// exited is called once per process after its teardown.
func (n *Node) exited(pid PID, e Exit) {
	if e.Err != nil && !errors.Is(e.Err, ErrShutdown) && !errors.Is(e.Err, ErrKilled) {
		n.log.Debug("process exited abnormally", "pid", pid.String(), "error", e.Err)
	}
}
