package process

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Node. The zero value is usable.
type Options struct {
	// Name is the node's name, carried by every PID it issues.
	// Default: the host name, or "local" when it cannot be read.
	Name string
	// Creation tells this incarnation of the node from earlier ones.
	// Default: derived from the start time.
	Creation uint32
	// Logger receives the node's own diagnostics. Default: slog.Default().
	Logger *slog.Logger
	// AbandonAfter is how long a killed goroutine process's function may
	// take to return before the process is reported abandoned (see
	// Abandoned). Default: DefaultAbandonAfter.
	AbandonAfter time.Duration
}

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
}

type transportBox struct{ t Transport }

// NewNode returns a node with no processes.
func NewNode(opts Options) *Node {
	n := &Node{name: opts.Name, creation: opts.Creation, log: opts.Logger, abandonAfter: opts.AbandonAfter}
	if n.abandonAfter <= 0 {
		n.abandonAfter = DefaultAbandonAfter
	}
	if n.name == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "local"
		}
		n.name = h
	}
	if n.creation == 0 {
		n.creation = uint32(time.Now().Unix())
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

// IsLocal reports whether pid belongs to this incarnation of this node.
func (n *Node) IsLocal(pid PID) bool { return pid.Node == n.name && pid.Creation == n.creation }

// SetTransport installs the route to other nodes. A nil t removes it.
func (n *Node) SetTransport(t Transport) {
	if t == nil {
		n.transport.Store(nil)
		return
	}
	n.transport.Store(&transportBox{t})
}

func (n *Node) remote() Transport {
	if b := n.transport.Load(); b != nil {
		return b.t
	}
	return nil
}

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
func (n *Node) Send(to PID, m Message) error {
	if to.Node == n.name {
		if to.Creation != n.creation {
			return fmt.Errorf("send to %s: %w", to, ErrNoProcess)
		}
		p := n.procs.load(to.ID)
		if p == nil {
			return fmt.Errorf("send to %s: %w", to, ErrNoProcess)
		}
		if err := p.deliver(&m); err != nil {
			return fmt.Errorf("send to %s: %w", to, err)
		}
		return nil
	}
	if to.IsZero() {
		return fmt.Errorf("send: %w: zero pid", ErrNoProcess)
	}
	t := n.remote()
	if t == nil {
		return fmt.Errorf("send to %s: %w: no transport to node %q", to, ErrUnreachable, to.Node)
	}
	return t.Send(to, m)
}

// Register names pid on this node. A name is held until it is unregistered
// or its process exits.
func (n *Node) Register(name string, pid PID) error {
	if name == "" || IsPIDString(name) {
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

// Resolve turns a destination string — a PID string or a registered name —
// into a PID.
func (n *Node) Resolve(dest string) (PID, error) {
	if IsPIDString(dest) {
		return ParsePID(dest)
	}
	if pid, ok := n.Whereis(dest); ok {
		return pid, nil
	}
	return PID{}, fmt.Errorf("%q: %w", dest, ErrNameNotFound)
}

// Terminate asks a process to stop; it exits with ErrShutdown once its code
// returns (a Behavior after its current message, a goroutine process when
// it sees its context cancelled). Use Kill when it does not stop in time.
func (n *Node) Terminate(pid PID) error {
	if !n.IsLocal(pid) {
		if t := n.remote(); t != nil && !pid.IsZero() {
			return t.Exit(pid, ErrShutdown)
		}
		return fmt.Errorf("terminate %s: %w", pid, ErrUnreachable)
	}
	p := n.lookup(pid)
	if p == nil {
		return fmt.Errorf("terminate %s: %w", pid, ErrNoProcess)
	}
	p.requestStop(ErrShutdown)
	return nil
}

// Exit asks a process to stop with reason, as a link would.
func (n *Node) Exit(pid PID, reason error) error {
	if reason == nil {
		reason = ErrShutdown
	}
	p := n.lookup(pid)
	if p == nil {
		if !n.IsLocal(pid) {
			if t := n.remote(); t != nil {
				return t.Exit(pid, reason)
			}
			return fmt.Errorf("exit %s: %w", pid, ErrUnreachable)
		}
		return fmt.Errorf("exit %s: %w", pid, ErrNoProcess)
	}
	p.requestStop(reason)
	return nil
}

// Kill ends a local process at once with ErrKilled: it is gone from the
// node, its monitors and links are told, and its goroutine (if it has one)
// is left to return on its own once it sees its context cancelled. A
// goroutine that has not returned Options.AbandonAfter later is reported
// abandoned (see Abandoned).
func (n *Node) Kill(pid PID) error {
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
