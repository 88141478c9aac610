package runtime

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/promreg"
)

// Results of a reload, the values of runner_reload_total's result label.
const (
	// ReloadApplied: the configuration was valid and is in force.
	ReloadApplied = "applied"
	// ReloadRejected: the configuration was invalid; nothing changed.
	ReloadRejected = "rejected"
)

// reloadResults lists every result a reload is counted under.
var reloadResults = []string{ReloadApplied, ReloadRejected}

// DefaultReloadHistory is how many reload attempts a Runtime remembers.
const DefaultReloadHistory = 20

// reloadErrorsKept bounds the errors kept of one rejected attempt: a broken
// configuration saved over and over must not grow the node.
const reloadErrorsKept = 100

// ReloadAttempt is one reload: when, how it ended, what it changed, and why it was rejected.
type ReloadAttempt struct {
	Time      time.Time `json:"time"`
	Result    string    `json:"result"` // "applied" | "rejected" (and any other result you count in runner_reload_total)
	Added     int       `json:"added"`
	Updated   int       `json:"updated"`
	Removed   int       `json:"removed"`
	Unchanged int       `json:"unchanged"`
	Outdated  int       `json:"outdated"` // processes left on old code by this reload
	// NotStarted counts the processes this reload should have moved to a
	// changed definition whose new code did not start; Warnings say
	// which, with the first error of each. The reload applied, degraded.
	NotStarted int `json:"not_started"`
	// Crashed counts the entries this reload added or changed that failed
	// within ReloadSettleWindow of it (new code that raises at once, a
	// supervisor that escalates): the reload applied, degraded, and the
	// Warnings say which, with the error.
	Crashed int `json:"crashed"`
	// Upgrades counts the processes this reload moved to their new code
	// in place (on_reload: upgrade), by result; those that failed (the new
	// code raised at once) make it degraded, and the Warnings name the
	// entries whose upgrades timed out or failed.
	Upgrades UpgradeCounts `json:"upgrades"`
	Warnings []string      `json:"warnings,omitempty"`
	Errors   []string      `json:"errors,omitempty"` // FILE:LINE:COL: ENTRY_ID: FIELD: message
	// allErrors is a digest of every error of a rejection, Errors keeping
	// only the first reloadErrorsKept: a look again that finds one past
	// them changed is no repeat (see Runtime.reload).
	allErrors [sha256.Size]byte
}

// Degraded reports whether an applied reload left something not running
// its new code: processes whose new code did not start, or entries that
// failed soon after it.
func (a ReloadAttempt) Degraded() bool {
	return a.Result == ReloadApplied && (a.NotStarted > 0 || a.Crashed > 0 || a.Upgrades.Failed > 0)
}

// reloadHistory keeps the last attempts for readers (/v1/reload, the
// health check, a live view) as an immutable slice, replaced whole on
// each attempt; the gauges say how the last one went.
type reloadHistory struct {
	mu      sync.Mutex // serializes writers; readers load list
	list    atomic.Pointer[[]ReloadAttempt]
	keep    int
	success prometheus.Gauge
	stamp   prometheus.Gauge
	// current is the reload under way, if one is.
	current    atomic.Pointer[ReloadProgress]
	inProgress prometheus.Gauge
}

// ReloadProgress describes a reload under way: loading, or applying (a
// slow start may hold it for up to the entry's start timeout).
type ReloadProgress struct {
	Since time.Time `json:"since"`
}

// ReloadInProgress returns the reload under way, if one is.
func (rt *Runtime) ReloadInProgress() (ReloadProgress, bool) {
	if p := rt.history.current.Load(); p != nil {
		return *p, true
	}
	return ReloadProgress{}, false
}

// begin marks a reload under way and returns what ends it; a reload that
// begins while another is under way (a second caller) leaves the mark to
// the first.
func (h *reloadHistory) begin() (end func()) {
	p := &ReloadProgress{Since: time.Now()}
	if !h.current.CompareAndSwap(nil, p) {
		return func() {}
	}
	h.inProgress.Set(1)
	return func() {
		h.current.Store(nil)
		h.inProgress.Set(0)
	}
}

func newReloadHistory(reg *prometheus.Registry, keep int) *reloadHistory {
	h := &reloadHistory{
		keep: keep,
		success: promreg.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runner_reload_last_success",
			Help: "1 when the last reload applied (or none was attempted yet: the configuration in force loaded), 0 when it was rejected.",
		})),
		stamp: promreg.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runner_reload_last_timestamp_seconds",
			Help: "When the last reload was attempted, in seconds since the Unix epoch; 0 before the first.",
		})),
	}
	h.inProgress = promreg.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "runner_reload_in_progress",
		Help: "1 while a reload is under way (loading or applying), 0 otherwise.",
	}))
	h.success.Set(1)
	return h
}

func (h *reloadHistory) record(a ReloadAttempt) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var old []ReloadAttempt
	if p := h.list.Load(); p != nil {
		old = *p
	}
	start := max(0, len(old)+1-h.keep)
	next := make([]ReloadAttempt, 0, len(old)-start+1)
	next = append(next, old[start:]...)
	next = append(next, a)
	h.list.Store(&next)
	if a.Result == ReloadApplied {
		h.success.Set(1)
	} else {
		h.success.Set(0)
	}
	h.stamp.Set(float64(a.Time.UnixNano()) / 1e9)
}

// amend changes the attempt recorded at at, if it is still kept, with f:
// the slice is replaced whole, as record does, for readers holding the old.
func (h *reloadHistory) amend(at time.Time, f func(*ReloadAttempt)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.list.Load()
	if p == nil {
		return
	}
	for i := len(*p) - 1; i >= 0; i-- {
		if (*p)[i].Time.Equal(at) {
			next := slices.Clone(*p)
			a := next[i]
			a.Warnings = slices.Clone(a.Warnings)
			f(&a)
			next[i] = a
			h.list.Store(&next)
			return
		}
	}
}

// ReloadHistory returns the last reload attempts, oldest first, at most
// RuntimeOptions.ReloadHistory of them. Only reloads counted in
// runner_reload_total are attempts: a load abandoned, or failed for a
// reason that may pass (and retried), is not.
func (rt *Runtime) ReloadHistory() []ReloadAttempt {
	p := rt.history.list.Load()
	if p == nil {
		return nil
	}
	return append([]ReloadAttempt(nil), (*p)...)
}

// LastReload returns the last reload attempt, if there was one.
func (rt *Runtime) LastReload() (ReloadAttempt, bool) {
	p := rt.history.list.Load()
	if p == nil || len(*p) == 0 {
		return ReloadAttempt{}, false
	}
	return (*p)[len(*p)-1], true
}

// rejectedAttempt is the attempt of a load that failed with err.
func rejectedAttempt(err error) ReloadAttempt {
	a := ReloadAttempt{Time: time.Now(), Result: ReloadRejected}
	var es config.Errors
	h := sha256.New()
	if errors.As(err, &es) {
		for i, e := range es {
			text := e.Error()
			fmt.Fprintf(h, "%d:%s", len(text), text)
			if i < reloadErrorsKept {
				a.Errors = append(a.Errors, text)
			} else if i == reloadErrorsKept {
				a.Errors = append(a.Errors, fmt.Sprintf("… and %d more", len(es)-i))
			}
		}
	} else {
		a.Errors = []string{err.Error()}
		h.Write([]byte(err.Error()))
	}
	h.Sum(a.allErrors[:0])
	return a
}
