package process

import (
	"context"
	"fmt"
)

// SpawnOptions configure a new process. The zero value spawns an unnamed,
// unlinked process with an unbounded mailbox.
type SpawnOptions struct {
	// MailboxSize bounds the mailbox; 0 means unbounded. Senders to a full
	// mailbox get ErrMailboxFull.
	MailboxSize int
	// Name registers the process under this name before it runs.
	Name string
	// LinkTo links the new process to this one before it runs.
	LinkTo PID
	// MonitorBy makes this process monitor the new one before it runs.
	MonitorBy PID
	// Limits bound what the process may hold (links, monitors, names,
	// unread events). Default: no limits.
	Limits Limits
	// TrapLinks starts the process trapping links.
	TrapLinks bool
	// System marks a process of the runtime itself — a supervisor, the
	// root supervisor, a pg scope, a pool — that untrusted code (a
	// script) must not end. TerminateFrom refuses it with
	// ErrSystemProcess unless the caller is its parent (LinkTo), and it
	// traps links, as an OTP supervisor traps exits: the abnormal exit of
	// a process linked to it arrives as a LINK_DOWN event, never as a
	// stop. The runtime's own Terminate, Exit, Kill and Stop still end it.
	System bool
	// Context is the parent of a goroutine process's context. Default:
	// context.Background().
	Context context.Context
}

// Spawn starts a Behavior process.
func (n *Node) Spawn(b Behavior, opts SpawnOptions) (PID, error) {
	if b == nil {
		return PID{}, fmt.Errorf("spawn: %w: nil behavior", ErrInvalidName)
	}
	p := n.newProcess(opts)
	p.behavior = b
	if err := n.install(p, opts); err != nil {
		return PID{}, err
	}
	if i, ok := b.(Initializer); ok {
		// Init runs as the process's first turn, before any message.
		p.sched.Store(schedRunning)
		go p.dispatchInit(i)
	} else if p.mb.len() > 0 {
		p.notify()
	}
	return p.pid, nil
}

// SpawnFunc starts a goroutine process running fn. The process exits when fn
// returns: normally with its value when err is nil, abnormally otherwise.
// A panic in fn is an abnormal exit.
func (n *Node) SpawnFunc(fn ProcFunc, opts SpawnOptions) (PID, error) {
	if fn == nil {
		return PID{}, fmt.Errorf("spawn: %w: nil function", ErrInvalidName)
	}
	p := n.newProcess(opts)
	x := p.extLocked()
	if opts.Context == nil {
		c := &stopCtx{} // spawn_ctx.go
		x.ctx, x.cancel = c, c.cancel
	} else {
		x.ctx, x.cancel = context.WithCancel(opts.Context)
	}
	x.run.Store(runStarted)
	x.self = Proc{p}
	if err := n.install(p, opts); err != nil {
		x.cancel()
		return PID{}, err
	}
	workers.start(p, fn) // workers.go
	return p.pid, nil
}

func (n *Node) newProcess(opts SpawnOptions) *process {
	p := &process{node: n}
	p.pid = PID{Node: n.name, ID: n.nextID.Add(1), Creation: n.creation}
	p.mb.setLimit(opts.MailboxSize)
	p.setLimits(opts.Limits)
	if opts.TrapLinks || opts.System {
		p.extLocked().trapLinks = true
	}
	if opts.System {
		x := p.extLocked()
		x.system = true
		x.parent = opts.LinkTo
	}
	return p
}

// install publishes p and applies the options that must hold before it runs.
func (n *Node) install(p *process, opts SpawnOptions) error {
	// The slot is taken before the check, so spawns racing for the last
	// ones cannot both pass it.
	if live := n.live.Add(1); n.maxProcs > 0 && live > n.maxProcs {
		n.live.Add(-1)
		return fmt.Errorf("spawn: %w: the node's limit of %d live processes is reached", ErrTooManyProcesses, n.maxProcs)
	}
	n.procs.store(p.pid.ID, p)
	fail := func(err error) error {
		p.finish(Exit{Err: err})
		return err
	}
	if opts.Name != "" {
		if err := n.Register(opts.Name, p.pid); err != nil {
			return fail(fmt.Errorf("spawn: %w", err))
		}
	}
	if !opts.LinkTo.IsZero() {
		if err := n.Link(opts.LinkTo, p.pid); err != nil {
			return fail(fmt.Errorf("spawn linked: %w", err))
		}
	}
	if !opts.MonitorBy.IsZero() {
		if err := n.Monitor(opts.MonitorBy, p.pid); err != nil {
			return fail(fmt.Errorf("spawn monitored: %w", err))
		}
	}
	return nil
}
