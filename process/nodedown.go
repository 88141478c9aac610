package process

// A node that goes down takes the exits of its processes with it: nothing
// will ever report them. So the node keeps, per remote node, the local
// processes that hold a link or monitor with one of its processes, and
// fires those relations with ErrNoConnection when the transport reports
// the node down (Inbound.NodeDown). The process's own relation sets stay
// the one record of what is linked and monitored; the index only says
// where to look.

// relate lists p under the node of other when other is remote; p.mu is
// held and x is p's ext.
func (n *Node) relate(p *process, x *procExt, other PID) {
	if !n.isRemote(other) {
		return
	}
	for _, nd := range x.relNodes {
		if nd == other.Node {
			return
		}
	}
	x.relNodes = append(x.relNodes, other.Node)
	n.relMu.Lock()
	if n.rel == nil {
		n.rel = make(map[string]map[PID]struct{})
	}
	set := n.rel[other.Node]
	if set == nil {
		set = make(map[PID]struct{})
		n.rel[other.Node] = set
	}
	set[p.pid] = struct{}{}
	n.relMu.Unlock()
}

// unrelate removes an exited process from the index.
func (n *Node) unrelate(pid PID, nodes []string) {
	n.relMu.Lock()
	defer n.relMu.Unlock()
	for _, nd := range nodes {
		if set := n.rel[nd]; set != nil {
			delete(set, pid)
			if len(set) == 0 {
				delete(n.rel, nd)
			}
		}
	}
}

// nodeDown fires every link and monitor between a local process and a
// process of node with ErrNoConnection, links first, and drops node's
// monitors of local processes.
func (n *Node) nodeDown(node string) {
	if node == n.name {
		return
	}
	n.relMu.Lock()
	set := n.rel[node]
	delete(n.rel, node)
	n.relMu.Unlock()
	down := Exit{Err: ErrNoConnection}
	for pid := range set {
		p := n.lookup(pid)
		if p == nil {
			continue
		}
		var links, watching []PID
		p.mu.Lock()
		x := p.ext.Load()
		if x == nil || p.dead.Load() {
			p.mu.Unlock()
			continue
		}
		for i, nd := range x.relNodes {
			if nd == node {
				x.relNodes = append(x.relNodes[:i], x.relNodes[i+1:]...)
				break
			}
		}
		for l := range x.links {
			if l.Node == node {
				links = append(links, l)
				delete(x.links, l)
			}
		}
		for w := range x.watching {
			if w.Node == node {
				watching = append(watching, w)
				delete(x.watching, w)
			}
		}
		for w := range x.monitors {
			if w.Node == node {
				delete(x.monitors, w)
			}
		}
		p.mu.Unlock()
		for _, l := range links {
			p.linkSignal(l, down)
		}
		for _, w := range watching {
			p.deliverEvent(Event{Kind: EventExit, From: w, Exit: down})
		}
	}
}
