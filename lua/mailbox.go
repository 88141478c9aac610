package lua

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// notify wakes the process if it is parked; Go-fed channels call it after
// queueing. It is the core's own wake-up, the one that mail and events use.
func (p *Process) notify() { p.proc.Notify() }

// park waits until something may have changed: mail, an event, an item on
// a Go-fed channel (each wakes the core's Wake, see notify), or a stop
// request. ready is checked after arming, so nothing that arrives
// meanwhile is missed. It returns an error (kind stopped) when the process
// must stop. A wake-up left over from an earlier park makes this one return
// early, which its caller's loop absorbs: it looks again and parks again.
func (p *Process) park(ready func() bool) error {
	if !p.upgradeFn {
		p.settleUpgrade(nil) // the new main waits: upgraded
	}
	p.proc.Arm()
	if ready() {
		p.proc.Disarm()
		return nil
	}
	select {
	case <-p.proc.Wake():
		// A waker disarms the process, but a wake-up left over from an
		// earlier park does not: disarm, or every sender would signal a
		// process that is running.
		p.proc.Disarm()
		return nil
	case <-p.proc.Context().Done():
		p.proc.Disarm()
		return errStopping
	}
}

var errStopping = value.NewError(value.KindStopped, "process stopping")

// mailbox routes the process core's mailbox to the inbox and the listen
// channels, and its events to the events channel. Messages are taken from
// the core's mailbox only when the script receives, so a bounded mailbox
// still pushes back on senders.
type mailbox struct {
	p       *Process
	inbox   *Channel
	listens map[string]*Channel
	events  *Channel
}

func (mb *mailbox) inboxChannel() *Channel {
	if mb.inbox == nil {
		mb.inbox = &Channel{owner: mb.p, external: true, kind: chanInbox}
	}
	return mb.inbox
}

func (mb *mailbox) eventsChannel() *Channel {
	if mb.events == nil {
		mb.events = &Channel{owner: mb.p, external: true, kind: chanEvents, conv: eventValue}
	}
	return mb.events
}

func (mb *mailbox) listenChannel(topic string) (*Channel, error) {
	if c, ok := mb.listens[topic]; ok {
		return c, nil
	}
	if limit := mb.p.host.limits.maxListens; len(mb.listens) >= limit {
		return nil, fmt.Errorf("listen %q: %w: a process may listen to at most %d topics", topic, process.ErrProcessLimit, limit)
	}
	if mb.listens == nil {
		mb.listens = map[string]*Channel{}
	}
	c := &Channel{owner: mb.p, external: true, kind: chanListen, topic: topic}
	mb.listens[topic] = c
	// Messages with this topic may already wait in the inbox channel,
	// parked there by an earlier receive on another listen channel. They
	// move over, in order, so listen(topic) sees every message with its
	// topic that no one has received yet, however the mailbox was read.
	if in := mb.inbox; in != nil {
		in.mu.Lock()
		kept := in.items[in.head:in.head]
		for _, it := range in.items[in.head:] {
			if m := it.(process.Received); m.Topic() == topic {
				c.pushLocked(m)
			} else {
				kept = append(kept, it)
			}
		}
		clear(in.items[in.head+len(kept):])
		in.items = in.items[:in.head+len(kept)]
		in.mu.Unlock()
	}
	return c, nil
}

// nextInbox returns the oldest message not claimed by a listen channel.
// An ask whose asker has stopped waiting is dropped on the way (see
// dropExpired).
func (mb *mailbox) nextInbox() (process.Received, bool) {
	if c := mb.inbox; c != nil {
		if m, ok := mb.nextSetAside(c); ok {
			return m, true
		}
	}
	for {
		m, ok := mb.p.proc.TryReceived()
		if !ok {
			return m, false
		}
		if len(mb.listens) > 0 {
			if lc, claimed := mb.listens[m.Topic()]; claimed {
				lc.mu.Lock()
				lc.pushLocked(m)
				lc.mu.Unlock()
				continue
			}
		}
		if mb.dropExpired(&m) {
			continue
		}
		return m, true
	}
}

// nextSetAside returns the oldest message set aside in c that is not an
// expired ask.
func (mb *mailbox) nextSetAside(c *Channel) (process.Received, bool) {
	for c.head < len(c.items) {
		c.mu.Lock()
		v, ok := c.popLocked()
		c.mu.Unlock()
		if !ok {
			break
		}
		if m := v.(process.Received); !mb.dropExpired(&m) {
			return m, true
		}
	}
	return process.Received{}, false
}

// nextListen returns the oldest message with c's topic, parking the others
// where their receivers will look. An ask whose asker has stopped waiting
// is dropped on the way (see dropExpired).
func (mb *mailbox) nextListen(c *Channel) (process.Received, bool) {
	if m, ok := mb.nextSetAside(c); ok {
		return m, true
	}
	for {
		m, ok := mb.p.proc.TryReceived()
		if !ok {
			return m, false
		}
		if m.Topic() == c.topic {
			if mb.dropExpired(&m) {
				continue
			}
			return m, true
		}
		dst := mb.listens[m.Topic()]
		if dst == nil {
			dst = mb.inboxChannel()
		}
		dst.mu.Lock()
		dst.pushLocked(m)
		dst.mu.Unlock()
	}
}

func (mb *mailbox) pumpEvents() {
	for {
		e, ok := mb.p.proc.TryEvent()
		if !ok {
			break
		}
		c := mb.eventsChannel()
		c.mu.Lock()
		c.pushLocked(e)
		c.mu.Unlock()
	}
	mb.announceUpgrade()
}

func (mb *mailbox) eventsPending() bool {
	mb.pumpEvents()
	return mb.events != nil && mb.events.Len() > 0
}

// eventValue renders a core event as {kind=, from=, result={value=, error=}}.
func eventValue(L *lua.LState, item any) lua.LValue {
	if u, ok := item.(upgradeEvent); ok {
		return u.value(L)
	}
	e := item.(process.Event)
	t := L.CreateTable(0, 3)
	t.RawSetString("kind", lua.LString(e.Kind.String()))
	t.RawSetString("from", PIDValue(e.From))
	r := L.CreateTable(0, 2)
	if e.Exit.Err != nil {
		r.RawSetString("error", ErrorValue(L, value.FromError(e.Exit.Err)))
	} else if e.Exit.Value != nil {
		lv, err := ToLua(L, e.Exit.Value)
		if err != nil {
			lv = ErrorValue(L, value.FromError(err))
		}
		r.RawSetString("value", lv)
	}
	t.RawSetString("result", r)
	return t
}
