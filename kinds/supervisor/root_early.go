package supervisor

import "github.com/proctor-run/proctor/process"

// maxEarlyExits bounds the EXITs the root holds for instances it has not
// been told of yet.
const maxEarlyExits = 256

// earlyExits holds the EXITs that beat their instance's watch message.
// An instance is monitored from its spawn (registry.StartOptions), so its
// EXIT can come before the runtime has called Watch, which it does the
// moment the start returns. Most such EXITs are taken within
// microseconds; one whose watch never comes is of a start that failed
// after the spawn, by a kind that did not drop its monitor (the shipped
// kinds and the runtime's abandoned starts drop it).
// Those must not pile up in a node that runs for months: past
// maxEarlyExits the oldest goes. Starts run one at a time on the
// runtime's loop, so the EXIT whose watch is on its way is among the
// newest, never the one dropped.
type earlyExits struct {
	byPID map[process.PID]process.Event
	order []process.PID // arrival order; may name PIDs already taken
}

// add holds e until take asks for its PID.
func (x *earlyExits) add(e process.Event) {
	if x.byPID == nil {
		x.byPID = map[process.PID]process.Event{}
	}
	x.byPID[e.From] = e
	x.order = append(x.order, e.From)
	for len(x.byPID) > maxEarlyExits {
		delete(x.byPID, x.order[0])
		x.order = x.order[1:]
	}
	if len(x.order) > 2*maxEarlyExits {
		// Taken PIDs still in order: keep only those held.
		kept := make([]process.PID, 0, len(x.byPID))
		for _, pid := range x.order {
			if _, ok := x.byPID[pid]; ok {
				kept = append(kept, pid)
			}
		}
		x.order = kept
	}
}

// take returns and forgets the EXIT held for pid.
func (x *earlyExits) take(pid process.PID) (process.Event, bool) {
	e, ok := x.byPID[pid]
	if ok {
		delete(x.byPID, pid)
	}
	return e, ok
}

// len is how many EXITs are held.
func (x *earlyExits) len() int { return len(x.byPID) }
