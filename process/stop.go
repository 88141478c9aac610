package process

import (
	"context"
	"fmt"
)

// AfterExit runs f, on a goroutine of its own, once the local process pid
// has exited, unless cancel is closed first: an instance whose process
// stands for it (a pg scope, an HTTP server) stops with it however it ends
// (terminate, kill, a link). When both have happened by the time it looks,
// either may win, so f must bear running after cancel (a halt that runs
// once). It reports false, and runs nothing, when pid is not alive.
func (n *Node) AfterExit(pid PID, f func(), cancel <-chan struct{}) bool {
	done, _, ok := n.Done(pid)
	if !ok {
		return false
	}
	go func() {
		select {
		case <-done:
			f()
		case <-cancel:
		}
	}()
	return true
}

// Done returns a channel closed when the local process pid has exited, and
// a function that returns its Exit once it has. ok is false when there is
// no such process (it may already have exited).
func (n *Node) Done(pid PID) (done <-chan struct{}, exit func() Exit, ok bool) {
	p := n.lookup(pid)
	if p == nil {
		return nil, nil, false
	}
	return p.doneOf()
}

// doneOf is Node.Done of p.
func (p *process) doneOf() (done <-chan struct{}, exit func() Exit, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	x := p.extLocked()
	if p.dead.Load() {
		return nil, nil, false
	}
	if x.done == nil {
		x.done = make(chan struct{})
	}
	return x.done, func() Exit {
		p.mu.Lock()
		defer p.mu.Unlock()
		return x.exit
	}, true
}

// Stop terminates a local process and waits for it to exit. When ctx ends
// first, the process is killed and Stop returns its ErrKilled exit; a
// goroutine that still does not return is reported abandoned (see Kill).
// It returns ErrNoProcess when there is no such process.
func (n *Node) Stop(ctx context.Context, pid PID) (Exit, error) {
	done, exit, ok := n.Done(pid)
	if !ok {
		return Exit{}, fmt.Errorf("stop %s: %w", pid, ErrNoProcess)
	}
	if err := n.Terminate(pid); err != nil {
		<-done
		return exit(), nil
	}
	select {
	case <-done:
		return exit(), nil
	case <-ctx.Done():
		_ = n.Kill(pid)
		<-done
		return exit(), nil
	}
}
