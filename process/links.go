package process

import (
	"fmt"
)

// Monitor makes watcher receive an EXIT event when target exits. Monitors
// are a set: monitoring a process twice still yields one event. When target
// is already gone the event arrives at once, with ErrNoProcess as its error.
func (n *Node) Monitor(watcher, target PID) error {
	w := n.lookup(watcher)
	if w == nil {
		return fmt.Errorf("monitor: watcher %s: %w", watcher, ErrNoProcess)
	}
	if !n.IsLocal(target) {
		t := n.remote()
		if t == nil || target.IsZero() {
			w.deliverEvent(Event{Kind: EventExit, From: target, Exit: Exit{Err: ErrUnreachable}})
			return nil
		}
		if err := t.Monitor(watcher, target); err != nil {
			return fmt.Errorf("monitor %s: %w", target, err)
		}
		n.addWatching(w, target)
		return nil
	}
	tp := n.lookup(target)
	if tp == nil || !n.addMonitor(tp, watcher) {
		w.deliverEvent(Event{Kind: EventExit, From: target, Exit: Exit{Err: ErrNoProcess}})
		return nil
	}
	n.addWatching(w, target)
	return nil
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
	return true
}

// addWatching records that w monitors target.
func (n *Node) addWatching(w *process, target PID) {
	w.mu.Lock()
	if w.dead.Load() {
		// Its teardown has run and did not see this monitor: drop it.
		w.mu.Unlock()
		n.dropMonitor(target, w.pid)
		return
	}
	x := w.extLocked()
	if x.watching == nil {
		x.watching = make(map[PID]struct{})
	}
	x.watching[target] = struct{}{}
	w.mu.Unlock()
}

// Demonitor removes watcher's monitor of target. Events already queued stay.
func (n *Node) Demonitor(watcher, target PID) {
	if w := n.lookup(watcher); w != nil {
		w.mu.Lock()
		if w.ext.Load() != nil {
			delete(w.ext.Load().watching, target)
		}
		w.mu.Unlock()
	}
	if !n.IsLocal(target) {
		if t := n.remote(); t != nil {
			t.Demonitor(watcher, target)
		}
		return
	}
	n.dropMonitor(target, watcher)
}

func (n *Node) dropMonitor(target, watcher PID) {
	if !n.IsLocal(target) {
		if t := n.remote(); t != nil {
			t.Demonitor(watcher, target)
		}
		return
	}
	if tp := n.lookup(target); tp != nil {
		tp.mu.Lock()
		if tp.ext.Load() != nil {
			delete(tp.ext.Load().monitors, watcher)
		}
		tp.mu.Unlock()
	}
}

// Link joins the fates of a and b: when one exits abnormally, the other is
// stopped with the same reason, unless it traps links, in which case it
// receives a LINK_DOWN event. A normal exit leaves the other untouched.
// Linking to a process that does not exist is ErrNoProcess.
func (n *Node) Link(a, b PID) error {
	if a == b {
		return nil
	}
	pa := n.lookup(a)
	if pa == nil {
		return fmt.Errorf("link %s: %w", a, ErrNoProcess)
	}
	if !n.IsLocal(b) {
		t := n.remote()
		if t == nil || b.IsZero() {
			return fmt.Errorf("link %s: %w", b, ErrUnreachable)
		}
		if err := t.Link(a, b); err != nil {
			return fmt.Errorf("link %s: %w", b, err)
		}
		if !addLink(pa, b) {
			t.Unlink(a, b)
			return fmt.Errorf("link %s: %w", a, ErrNoProcess)
		}
		return nil
	}
	pb := n.lookup(b)
	if pb == nil || !addLink(pb, a) {
		return fmt.Errorf("link %s: %w", b, ErrNoProcess)
	}
	if !addLink(pa, b) {
		// a died meanwhile; its teardown did not see this link, so undo it.
		removeLink(pb, a)
		return fmt.Errorf("link %s: %w", a, ErrNoProcess)
	}
	return nil
}

func addLink(p *process, other PID) bool {
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
		} else if !n.IsLocal(pair[0]) && !pair[0].IsZero() {
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

// linkExit delivers the exit e of from to the process linked to it.
func (n *Node) linkExit(to, from PID, e Exit) {
	if !n.IsLocal(to) {
		if t := n.remote(); t != nil {
			t.LinkExit(to, from, e)
		}
		return
	}
	p := n.lookup(to)
	if p == nil || !removeLink(p, from) || e.Normal() {
		return
	}
	p.mu.Lock()
	trap := p.ext.Load() != nil && p.ext.Load().trapLinks
	p.mu.Unlock()
	if trap {
		p.deliverEvent(Event{Kind: EventLinkDown, From: from, Exit: e})
		return
	}
	p.requestStop(&LinkError{From: from, Reason: e.Err})
}

// sendEvent delivers an event to a watcher. Watchers are always local
// (Monitor takes a local watcher): a transport serves a remote watcher
// through a local process of its own that monitors on its behalf.
func (n *Node) sendEvent(to PID, e Event) {
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
