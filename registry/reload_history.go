package registry

import (
	"errors"
	"sync"
	"time"
)

// ReloadAttempt is one reload as the history keeps it.
type ReloadAttempt struct {
	Time      time.Time `json:"time"`
	Result    string    `json:"result"`
	Added     int       `json:"added"`
	Updated   int       `json:"updated"`
	Removed   int       `json:"removed"`
	Unchanged int       `json:"unchanged"`
	Outdated  int       `json:"outdated"`
	Errors    []string  `json:"errors,omitempty"`
}

// Results of a reload attempt: the values of runner_reload_total's result
// label.
const (
	ReloadApplied  = "applied"
	ReloadRejected = "rejected"
)

// Bounds of the history: a broken configuration saved over and over must
// not grow the node.
const (
	reloadHistorySize = 32  // attempts kept
	reloadErrorsKept  = 100 // errors kept of one rejected attempt
)

// reloadHistory is the ring of the latest attempts. Reloads are rare and
// come from one watcher (or a caller of Reload), so a mutex is all it needs.
type reloadHistory struct {
	mu       sync.Mutex
	attempts []ReloadAttempt // oldest first
}

func (h *reloadHistory) add(a ReloadAttempt) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.attempts) == reloadHistorySize {
		h.attempts = append(h.attempts[:0], h.attempts[1:]...)
	}
	h.attempts = append(h.attempts, a)
}

// ReloadHistory returns the latest reload attempts (at most 32), oldest
// first: when each ran, whether it applied, what it changed, and the
// errors of a rejected one.
func (r *Runtime) ReloadHistory() []ReloadAttempt {
	r.history.mu.Lock()
	defer r.history.mu.Unlock()
	out := make([]ReloadAttempt, len(r.history.attempts))
	copy(out, r.history.attempts)
	return out
}

// recordApplied adds an applied reload to the history.
func (r *Runtime) recordApplied(sum ReloadSummary) {
	r.history.add(ReloadAttempt{
		Time: time.Now(), Result: ReloadApplied,
		Added: len(sum.Added), Updated: len(sum.Updated), Removed: len(sum.Removed), Unchanged: len(sum.Unchanged),
	})
}

// recordRejected adds a rejected reload to the history, with its errors.
func (r *Runtime) recordRejected(err error) {
	var msgs []string
	var es Errors
	if errors.As(err, &es) {
		for i, e := range es {
			if i == reloadErrorsKept {
				msgs = append(msgs, "… and more")
				break
			}
			msgs = append(msgs, e.Error())
		}
	} else {
		msgs = []string{err.Error()}
	}
	r.history.add(ReloadAttempt{Time: time.Now(), Result: ReloadRejected, Errors: msgs})
}
