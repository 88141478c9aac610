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

// settleLog holds, for each entry an applied reload added or changed
// while that reload's window runs, the reload's time and whether the
// entry failed already. A later reload that leaves the entry alone (one
// that changed nothing, or changed another entry) does not end its
// window: the crash of the code the first one started still counts
// against it. The runtime's exits and the kinds' (Env.Crashed, from their
// own goroutines) report to it, so it has its own lock, as renewalLog
// does.
type settleLog struct {
	mu      sync.Mutex
	history *reloadHistory
	entries map[registry.ID]*settling
}

// settling is one entry's window.
type settling struct {
	at      time.Time // the reload's, as recorded
	crashed bool
}

// begin starts the window of the reload recorded at at for each entry it
// added or changed, and forgets the windows that have passed.
func (l *settleLog) begin(at time.Time, sum ReloadSummary) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries == nil {
		l.entries = map[registry.ID]*settling{}
	}
	for id, s := range l.entries {
		if at.Sub(s.at) > ReloadSettleWindow {
			delete(l.entries, id)
		}
	}
	for _, ids := range [][]registry.ID{sum.Added, sum.Updated} {
		for _, id := range ids {
			l.entries[id] = &settling{at: at}
		}
	}
}

// failed counts a failure of what runs id against the reload that last
// added or changed id while its window runs: once per entry and reload.
func (l *settleLog) failed(id registry.ID, e *registry.Entry, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.entries[id]
	if s == nil || s.crashed {
		return
	}
	since := time.Since(s.at)
	if since > ReloadSettleWindow {
		delete(l.entries, id)
		return
	}
	s.crashed = true
	l.history.amend(s.at, func(a *ReloadAttempt) {
		a.Crashed++
		if len(a.Warnings) < maxSettleWarnings {
			a.Warnings = append(a.Warnings, fmt.Sprintf("%s failed %s after the reload: %s", id, since.Round(time.Microsecond*100), e.ShowError(err)))
		}
	})
}
