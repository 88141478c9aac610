package registry

import (
	"fmt"
	"time"
)

// ReloadSettleWindow is how long after an applied reload a failure of what
// it added or changed counts against it. New code whose top level raises
// starts (its spawn succeeds) and then crash-loops under the root
// supervisor; the reload said applied, healthy, while only /readyz showed
// it. The window is the root supervisor's own: an instance counts as
// recovered once it stays up this long (kinds/supervisor).
const ReloadSettleWindow = 10 * time.Second

// maxSettleWarnings bounds the warnings one reload gathers this way.
const maxSettleWarnings = 20

// settling is the last applied reload while its window runs: what it
// started, and which of those failed already. Owned by the loop.
type settling struct {
	at      time.Time
	entries map[ID]bool
	crashed map[ID]bool
}

// settle starts the window of the reload recorded at at.
func (rt *Runtime) settle(at time.Time, sum ReloadSummary) {
	ids := make(map[ID]bool, len(sum.Added)+len(sum.Updated))
	for _, id := range sum.Added {
		ids[id] = true
	}
	for _, id := range sum.Updated {
		ids[id] = true
	}
	rt.settling = nil
	if len(ids) > 0 {
		rt.settling = &settling{at: at, entries: ids, crashed: map[ID]bool{}}
	}
}

// crashedAfterReload counts a failure of id against the last reload when
// it added or changed id and its window still runs: once per entry.
func (rt *Runtime) crashedAfterReload(id ID, e *Entry, err error) {
	s := rt.settling
	if s == nil || !s.entries[id] || s.crashed[id] {
		return
	}
	since := time.Since(s.at)
	if since > ReloadSettleWindow {
		rt.settling = nil
		return
	}
	s.crashed[id] = true
	rt.history.amend(s.at, func(a *ReloadAttempt) {
		a.Crashed++
		if len(a.Warnings) < maxSettleWarnings {
			a.Warnings = append(a.Warnings, fmt.Sprintf("%s failed %s after the reload: %s", id, since.Round(time.Millisecond), e.ShowError(err)))
		}
	})
}
