package process

import (
	"errors"
	"fmt"
)

// A process is an Owner of its own state once its code asks for one
// (Context.Owner, Proc.Owner): each command submitted through it travels
// as a message, and the process runs it itself, in mailbox order, before
// its code sees the next message. The code never sees a command, so no
// kind can forget to run them, and a process that never asked for an Owner
// can be sent none.

// commandTopic is the topic of a command travelling to a process owner
// (what a dead letter would show).
const commandTopic = "$owner.command"

// command is a message payload carrying a command for a process owner. Its
// type is unexported, so only a process's own Owner can make one: nothing
// a script or a peer sends can run code on a process.
type command struct{ fn func() }

// Owner returns the process as an Owner, for its state's callers. From the
// first call on, the process runs the commands they submit before each
// message its Receive is handed.
func (c Context) Owner() Owner { return c.p.owner() }

// Owner returns the process as an Owner, for its state's callers. From the
// first call on, TryReceive, TryReceived and Receive run the commands they
// submit and return only the other messages. Only the process's own
// goroutine may call it.
func (h *Proc) Owner() Owner { return h.p.owner() }

// owner marks p as running commands and returns it as an Owner; on p's
// own goroutine.
func (p *process) owner() Owner {
	p.owned = true
	done, exit, ok := p.doneOf()
	if !ok {
		// Killed already: a call fails at once, as to any stopped owner.
		done, exit = closedDone, func() Exit { return p.ext.Load().exit }
	}
	return procOwner{n: p.node, pid: p.pid, done: done, exit: exit}
}

// closedDone is the Done of an owner whose process had exited already.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// runCommand runs e's command when e carries one and reports whether it
// did; on the process's goroutine, for a process that is an Owner.
func runCommand(e envelope) bool {
	c, ok := e.payload.(command)
	if ok {
		c.fn()
	}
	return ok
}

// stoppedError is why a call fails when its owner stopped first:
// ErrLoopStopped, and for a process the exit that ended it.
func stoppedError(o Owner) error {
	if po, ok := o.(procOwner); ok {
		return fmt.Errorf("%w: %w", ErrLoopStopped, exitedError(po.pid, po.exit()))
	}
	return ErrLoopStopped
}

// procOwner is a process seen as an Owner; see Context.Owner.
type procOwner struct {
	n    *Node
	pid  PID
	done <-chan struct{}
	exit func() Exit
}

func (o procOwner) Submit(fn func()) error {
	err := o.n.Send(o.pid, Message{Topic: commandTopic, Payload: command{fn}})
	if errors.Is(err, ErrNoProcess) {
		return ErrLoopStopped
	}
	return err
}

func (o procOwner) Done() <-chan struct{} { return o.done }
