package process

// Idle reports whether the local process pid has nothing to do: its mailbox
// is empty and it is not handling a message (a Behavior with no dispatcher
// running, or one whose dispatcher yields before it looks for mail again; a
// goroutine process parked, suspended or Looking for mail, not for a timer
// or a reply: see Proc.Busy).
// Routers need it to prefer idle routees and to retire a routee only once
// it has finished what it accepted; the mailbox length alone cannot tell a
// routee that is busy with its last message from one that is waiting.
// False for a dead or remote PID.
func (n *Node) Idle(pid PID) bool {
	p := n.lookup(pid)
	if p == nil || p.dead.Load() || p.mb.len() > 0 {
		return false
	}
	if p.behavior != nil {
		return p.sched.Load() != schedRunning
	}
	if p.wait.Load() == waitRunning {
		return false
	}
	x := p.ext.Load()
	return x == nil || !x.busy.Load()
}
