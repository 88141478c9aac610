package runtime

import (
	"fmt"
	"sync"
	"time"

	"github.com/proctor-run/proctor/registry"
)

// ReloadSettleWindow is how long after an applied reload a failure of what
// it added or changed counts against it. New code whose top level raises
// starts (its spawn succeeds) and then crash-loops — an entry under the
// root supervisor, a pool's routee restarted in place, a supervisor's
// child — and the reload said applied, healthy. The window is the root
// supervisor's own: an instance counts as recovered once it stays up this
// long (kinds/supervisor).
const ReloadSettleWindow = 10 * time.Second

// maxSettleWarnings bounds the warnings one reload gathers this way.
const maxSettleWarnings = 20

// settleLog is the last applied reload while its window runs: the entries
// it added or changed, and which of those failed already. The runtime's
// exits and the kinds' (Env.Crashed, from their own goroutines) report to
// it, so it has its own lock, as renewalLog does.
type settleLog struct {
	mu      sync.Mutex
	history *reloadHistory
	at      time.Time
	entries map[registry.ID]bool
	crashed map[registry.ID]bool
}

// begin starts the window of the reload recorded at at, which added or
// changed sum's entries.
func (l *settleLog) begin(at time.Time, sum ReloadSummary) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at, l.entries, l.crashed = at, map[registry.ID]bool{}, map[registry.ID]bool{}
	for _, id := range sum.Added {
		l.entries[id] = true
	}
	for _, id := range sum.Updated {
		l.entries[id] = true
	}
}

// failed counts a failure of what runs id against the last reload when it
// added or changed id and its window still runs: once per entry.
func (l *settleLog) failed(id registry.ID, e *registry.Entry, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.entries[id] || l.crashed[id] {
		return
	}
	since := time.Since(l.at)
	if since > ReloadSettleWindow {
		l.entries = nil
		return
	}
	l.crashed[id] = true
	l.history.amend(l.at, func(a *ReloadAttempt) {
		a.Crashed++
		if len(a.Warnings) < maxSettleWarnings {
			a.Warnings = append(a.Warnings, fmt.Sprintf("%s failed %s after the reload: %s", id, since.Round(time.Microsecond*100), e.ShowError(err)))
		}
	})
}
