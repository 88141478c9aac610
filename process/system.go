package process

import "fmt"

// System processes are the runtime's own: supervisors, the root
// supervisor, pg scopes, pools. A script can reach their PIDs (the root's
// is always the node's first), so the paths a script takes to end a
// process — TerminateFrom, and links — must not end them; the runtime
// stops them with Terminate, Exit, Kill and Stop, which scripts never
// reach.

// IsSystem reports whether pid is a live local process spawned with
// SpawnOptions.System.
func (n *Node) IsSystem(pid PID) bool {
	p := n.lookup(pid)
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	x := p.ext.Load()
	return x != nil && x.system && !p.dead.Load()
}

// TerminateFrom is Terminate on behalf of from, a caller that is not part
// of the runtime (a script): a system process refuses with
// ErrSystemProcess, unless from is its parent — the process it was spawned
// linked to, which owns it as an OTP supervisor's parent does. Bindings
// that let untrusted code stop processes use this, never Terminate.
func (n *Node) TerminateFrom(from, pid PID) error {
	if p := n.lookup(pid); p != nil && p.refuses(from) {
		return fmt.Errorf("terminate %s: %w", pid, ErrSystemProcess)
	}
	// A remote pid's node makes the same check with from.
	return n.exitFrom(from, pid, ErrShutdown, "terminate")
}

// refuses reports whether p is a system process that from may not stop.
func (p *process) refuses(from PID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	x := p.ext.Load()
	return x != nil && x.system && (x.parent.IsZero() || x.parent != from)
}
