package process

import (
	"errors"
	"fmt"
)

// Monitor makes watcher receive an EXIT event when target exits. Monitors
// are a set: monitoring a process twice still yields one event. When target
// is already gone the event arrives at once, with ErrNoProcess as its error;
// when it is on a node that cannot be reached, with that error
// (ErrUnreachable).
func (n *Node) Monitor(watcher, target PID) error {
	w := n.lookup(watcher)
	if w == nil {
		return fmt.Errorf("monitor: watcher %s: %w", watcher, ErrNoProcess)
	}
	if err := w.checkRoom(func(x *procExt) (map[PID]struct{}, int) { return x.watching, x.limits.MaxMonitors }, target, "monitors"); err != nil {
		return fmt.Errorf("monitor %s: %w", target, err)
	}
	if n.isRemote(target) {
		return n.monitorRemote(w, target)
	}
	tp := n.lookup(target)
	if tp == nil || !n.addMonitor(tp, watcher) {
		w.deliverEvent(Event{Kind: EventExit, From: target, Exit: Exit{Err: ErrNoProcess}})
		return nil
	}
	n.addWatching(w, target)
	return nil
}

// Monitors reports whether watcher monitors target, a live process of
// this node. Both are false once target is gone: its monitors then have
// their EXIT, or will. (The root supervisor asks it to find kinds that did
// not monitor their instance from its spawn.)
func (n *Node) Monitors(watcher, target PID) (monitors, alive bool) {
	tp := n.lookup(target)
	if tp == nil {
		return false, false
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.dead.Load() {
		return false, false
	}
	if x := tp.ext.Load(); x != nil {
		_, monitors = x.monitors[watcher]
	}
	return monitors, true
}

// monitorRemote records the monitor before the transport carries it, so an
// answer that comes back at once (the target is gone) finds it.
func (n *Node) monitorRemote(w *process, target PID) error {
	t := n.remote()
	if t == nil {
		w.deliverEvent(Event{Kind: EventExit, From: target, Exit: Exit{Err: ErrUnreachable}})
		return nil
	}
	if !n.addWatching(w, target) {
		return fmt.Errorf("monitor: watcher %s: %w", w.pid, ErrNoProcess)
	}
	err := t.Monitor(w.pid, target)
	if err == nil {
		return nil
	}
	n.unwatch(w, target)
	if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrNoConnection) {
		w.deliverEvent(Event{Kind: EventExit, From: target, Exit: Exit{Err: err}})
		return nil
	}
	return fmt.Errorf("monitor %s: %w", target, err)
}

func (n *Node) addMonitor(tp *process, watcher PID) bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.dead.Load() {
		return false
	}
	x := tp.extLocked()
	if x.monitors == nil {
		x.monitors = make(map[PID]struct{})
	}
	x.monitors[watcher] = struct{}{}
	n.relate(tp, x, watcher)
	return true
}

// addWatching records that w monitors target. It reports false when w has
// exited (its monitor of a local target is then dropped again).
func (n *Node) addWatching(w *process, target PID) bool {
	w.mu.Lock()
	if w.dead.Load() {
		// Its teardown has run and did not see this monitor: drop it.
		w.mu.Unlock()
		if !n.isRemote(target) {
			n.dropMonitor(target, w.pid)
		}
		return false
	}
	x := w.extLocked()
	if x.watching == nil {
		x.watching = make(map[PID]struct{})
	}
	x.watching[target] = struct{}{}
	n.relate(w, x, target)
	w.mu.Unlock()
	return true
}

// unwatch forgets that w monitors target.
func (n *Node) unwatch(w *process, target PID) {
	w.mu.Lock()
	if x := w.ext.Load(); x != nil {
		delete(x.watching, target)
	}
	w.mu.Unlock()
}

// Demonitor removes watcher's monitor of target. Events already queued stay.
func (n *Node) Demonitor(watcher, target PID) {
	if w := n.lookup(watcher); w != nil {
		n.unwatch(w, target)
	}
	n.dropMonitor(target, watcher)
}

// dropMonitor removes watcher from target's monitors, wherever target is.
func (n *Node) dropMonitor(target, watcher PID) {
	if n.isRemote(target) {
		if t := n.remote(); t != nil {
			t.Demonitor(watcher, target)
		}
		return
	}
	if tp := n.lookup(target); tp != nil {
		tp.mu.Lock()
		if x := tp.ext.Load(); x != nil {
			delete(x.monitors, watcher)
		}
		tp.mu.Unlock()
	}
}

// Link joins the fates of a and b: when one exits abnormally, the other is
// stopped with the same reason, unless it traps links, in which case it
// receives a LINK_DOWN event. A normal exit leaves the other untouched.
// Linking to a local process that does not exist is ErrNoProcess; to a
// remote one, the link is made and then fires with ErrNoProcess, as
// Erlang's link to a remote process does.
func (n *Node) Link(a, b PID) error {
	if a == b {
		return nil
	}
	if n.isRemote(a) && !n.isRemote(b) {
		a, b = b, a // a link is symmetric; a is the local end
	}
	pa := n.lookup(a)
	if pa == nil {
		return fmt.Errorf("link %s: %w", a, ErrNoProcess)
	}
	if err := pa.checkRoom(func(x *procExt) (map[PID]struct{}, int) { return x.links, x.limits.MaxLinks }, b, "links"); err != nil {
		return fmt.Errorf("link %s: %w", b, err)
	}
	if n.isRemote(b) {
		t := n.remote()
		if t == nil {
			return fmt.Errorf("link %s: %w", b, ErrUnreachable)
		}
		// Recorded first, so an answer that comes back at once (b is
		// gone) finds the link.
		if !n.addLink(pa, b) {
			return fmt.Errorf("link %s: %w", a, ErrNoProcess)
		}
		if err := t.Link(a, b); err != nil {
			removeLink(pa, b)
			return fmt.Errorf("link %s: %w", b, err)
		}
		return nil
	}
	pb := n.lookup(b)
	if pb == nil || !n.addLink(pb, a) {
		return fmt.Errorf("link %s: %w", b, ErrNoProcess)
	}
	if !n.addLink(pa, b) {
		// a died meanwhile; its teardown did not see this link, so undo it.
		removeLink(pb, a)
		return fmt.Errorf("link %s: %w", a, ErrNoProcess)
	}
	return nil
}

func (n *Node) addLink(p *process, other PID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead.Load() {
		return false
	}
	x := p.extLocked()
	if x.links == nil {
		x.links = make(map[PID]struct{})
	}
	x.links[other] = struct{}{}
	n.relate(p, x, other)
	return true
}

func removeLink(p *process, other PID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ext.Load() == nil {
		return false
	}
	_, had := p.ext.Load().links[other]
	delete(p.ext.Load().links, other)
	return had
}

// Unlink removes the link between a and b, if any.
func (n *Node) Unlink(a, b PID) {
	for _, pair := range [2][2]PID{{a, b}, {b, a}} {
		if p := n.lookup(pair[0]); p != nil {
			removeLink(p, pair[1])
		} else if n.isRemote(pair[0]) && !n.isRemote(pair[1]) {
			if t := n.remote(); t != nil {
				t.Unlink(pair[1], pair[0])
			}
		}
	}
}

// SetTrapLinks makes pid receive LINK_DOWN events instead of being stopped
// when a linked process exits abnormally. A system process keeps trapping
// whatever trap says.
func (n *Node) SetTrapLinks(pid PID, trap bool) error {
	p := n.lookup(pid)
	if p == nil {
		return fmt.Errorf("trap links %s: %w", pid, ErrNoProcess)
	}
	p.mu.Lock()
	x := p.extLocked()
	// A system process always traps: a link must never stop it.
	x.trapLinks = trap || x.system
	p.mu.Unlock()
	return nil
}

// linkExit delivers the exit e of from to the process to linked to it.
func (n *Node) linkExit(to, from PID, e Exit) {
	if n.isRemote(to) {
		if t := n.remote(); t != nil {
			t.LinkExit(from, to, e)
		}
		return
	}
	p := n.lookup(to)
	if p == nil || !removeLink(p, from) || e.Normal() {
		return
	}
	p.linkSignal(from, e)
}

// linkSignal applies the abnormal exit e of from, a process linked to p
// whose link is already removed: a LINK_DOWN event when p traps links, a
// stop otherwise.
func (p *process) linkSignal(from PID, e Exit) {
	p.mu.Lock()
	trap := p.ext.Load() != nil && p.ext.Load().trapLinks
	p.mu.Unlock()
	if trap {
		p.deliverEvent(Event{Kind: EventLinkDown, From: from, Exit: e})
		return
	}
	p.requestStop(&LinkError{From: from, Reason: e.Err})
}

// sendEvent delivers the EXIT of from to its watcher to, on this node or,
// through the transport, on another.
func (n *Node) sendEvent(to PID, e Event) {
	if n.isRemote(to) {
		if t := n.remote(); t != nil {
			t.MonitorExit(e.From, to, e.Exit)
		}
		return
	}
	if p := n.lookup(to); p != nil {
		p.deliverEvent(e)
	}
}

// LinkError is the exit reason of a process stopped because a linked
// process exited abnormally.
type LinkError struct {
	From   PID
	Reason error
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("linked process %s exited: %v", e.From, e.Reason)
}

func (e *LinkError) Unwrap() error { return e.Reason }
