package process

// Transport carries what the process core addresses to PIDs of other nodes.
// The cluster layer implements it and installs it with Node.SetTransport;
// the core never imports the cluster layer.
//
// Every method must return promptly: an unreachable node is an error (or,
// for Monitor, an EXIT event with ErrUnreachable delivered to the watcher),
// never a wait.
type Transport interface {
	// Send delivers m to a remote process. When m can be replied to, the
	// transport keeps its ReplyTarget and settles it when the reply returns.
	Send(to PID, m Message) error
	// Monitor makes local watcher receive an EXIT event when remote target
	// exits or its node becomes unreachable.
	Monitor(watcher, target PID) error
	// Demonitor undoes Monitor.
	Demonitor(watcher, target PID)
	// Link records a link between local and remote; LinkExit signals the
	// remote side when local exits.
	Link(local, remote PID) error
	Unlink(local, remote PID)
	LinkExit(remote, local PID, e Exit)
	// Exit asks a remote process to stop with reason.
	Exit(pid PID, reason error) error
}

// Inbound is what a transport calls on the receiving node. These methods
// are the other half of the seam: Node implements them.
type Inbound interface {
	Send(to PID, m Message) error
	RemoteExit(watcherOrLinked, from PID, e Exit, link bool)
}

var _ Inbound = (*Node)(nil)

// RemoteExit delivers the exit of a remote process to a local one: as an
// EXIT event for a monitor (link false), or as a link signal (link true),
// which stops the local process unless it traps links.
func (n *Node) RemoteExit(local, from PID, e Exit, link bool) {
	if link {
		n.linkExit(local, from, e)
		return
	}
	if p := n.lookup(local); p != nil {
		p.mu.Lock()
		if p.ext.Load() != nil {
			delete(p.ext.Load().watching, from)
		}
		p.mu.Unlock()
		p.deliverEvent(Event{Kind: EventExit, From: from, Exit: e})
	}
}
