package runtime

import (
	"github.com/proctor-run/proctor/value"
)

// Liveness is implemented by an Owner that can itself die (the root
// supervisor is a process): Alive reports whether it still restarts what
// fails.
type Liveness interface {
	Alive() bool
}

// observed is s's state as reports (/v1/entries, /readyz, runner_entries)
// show it. The state is what the loop last published, and the loop learns
// of an exit only from the owner; so an entry whose process has exited is
// corrected here from the node itself and never shown running: starting
// while its owner lives and will restart it, failed once the owner is
// gone and nothing will.
func (rt *Runtime) observed(s *slot) EntryState {
	st := *s.state.Load()
	if st.Status != StatusRunning || st.Instance == nil {
		return st
	}
	pid := st.Instance.PID()
	node := rt.opts.Node
	if !node.IsLocal(pid) || node.Alive(pid) {
		return st
	}
	if ob := rt.owner.Load(); ob != nil {
		if l, ok := ob.o.(Liveness); !ok || l.Alive() {
			st.Status = StatusStarting
			st.Err = value.NewError(value.KindStopped, "its process %s has exited; its supervisor restarts it", pid)
			return st
		}
	}
	st.Status = StatusFailed
	st.Err = value.NewError(value.KindStopped, "its process %s has exited and no supervisor restarts it", pid)
	return st
}
