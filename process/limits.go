package process

import (
	"fmt"

	"github.com/proctor-run/proctor/value"
)

// Limits bound what one process may hold, so that a process of untrusted
// code (a script) that monitors, links, registers in a loop, or never
// reads its events, gets an error or loses the excess instead of taking
// the node's memory. The zero value of a field means no limit: the
// runtime's own processes (a supervisor links to every child, a pg scope
// monitors every member) are bounded by what they serve, not here. The Lua
// host sets them for every script (lua.Options.ProcessLimits).
type Limits struct {
	// MaxEvents bounds the events (monitor EXITs, LINK_DOWNs) queued and
	// not yet read. An event past it is dropped and reported as a dead
	// letter (DeadEventOverflow): the process that exits cannot be told,
	// and the receiver that does not read its events has no use for more.
	MaxEvents int
	// MaxLinks bounds the links the process holds: Link from it to a new
	// process past it fails with ErrProcessLimit.
	MaxLinks int
	// MaxMonitors bounds the processes it monitors: Monitor of a new
	// target past it fails with ErrProcessLimit.
	MaxMonitors int
	// MaxNames bounds the names it holds: Register of one more fails with
	// ErrProcessLimit.
	MaxNames int
}

// ErrProcessLimit: a process reached one of its Limits.
var ErrProcessLimit = value.Sentinel("process.process_limit", value.KindLimit, "process limit reached")

// DeadEventOverflow: an event dropped because its receiver had
// Limits.MaxEvents events queued unread. From is the process the event is
// about, Topic the event's kind (EXIT, LINK_DOWN).
const DeadEventOverflow DeadLetterReason = "event_overflow"

// setLimits applies l to p before it is published.
func (p *process) setLimits(l Limits) {
	if l == (Limits{}) {
		return
	}
	x := p.extLocked()
	x.limits = l // MaxEvents bounds the event queue when it is made
}

// roomFor returns ErrProcessLimit, with what was refused, when a set of
// size n that does not hold key yet may not grow past limit. p.mu must be
// held.
func roomFor[K comparable](set map[K]struct{}, key K, limit int, what string) error {
	if limit <= 0 || len(set) < limit {
		return nil
	}
	if _, ok := set[key]; ok {
		return nil
	}
	return fmt.Errorf("%w: a process may hold at most %d %s", ErrProcessLimit, limit, what)
}

// checkRoom runs roomFor on p's set under p.mu.
func (p *process) checkRoom(set func(x *procExt) (map[PID]struct{}, int), key PID, what string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	x := p.ext.Load()
	if x == nil {
		return nil
	}
	s, limit := set(x)
	return roomFor(s, key, limit, what)
}

// eventDropped reports e, dropped because to had too many events queued.
func (n *Node) eventDropped(to PID, e *Event) {
	n.DeadLetter(DeadLetter{From: e.From, To: to.String(), Topic: e.Kind.String(), Reason: DeadEventOverflow})
}
