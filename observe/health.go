package observe

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// Health is a set of named checks; it implements registry.HealthRegistry.
// Checks change rarely and are read on every probe, so the set is
// copy-on-write: probes read a published map without locking.
type Health struct {
	mu     sync.Mutex // serializes writers only
	checks atomic.Pointer[map[string]func() error]
}

// NewHealth returns an empty set of checks.
func NewHealth() *Health {
	h := &Health{}
	m := map[string]func() error{}
	h.checks.Store(&m)
	return h
}

// SetCheck registers or replaces a check; a nil error is healthy.
func (h *Health) SetCheck(name string, check func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := *h.checks.Load()
	m := make(map[string]func() error, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[name] = check
	h.checks.Store(&m)
}

// RemoveCheck drops a check.
func (h *Health) RemoveCheck(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := *h.checks.Load()
	if _, ok := old[name]; !ok {
		return
	}
	m := make(map[string]func() error, len(old))
	for k, v := range old {
		if k != name {
			m[k] = v
		}
	}
	h.checks.Store(&m)
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	Name  string
	Error error
}

// Run runs every check, sorted by name. A check that panics fails.
func (h *Health) Run() []CheckResult {
	m := *h.checks.Load()
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]CheckResult, 0, len(names))
	for _, n := range names {
		out = append(out, CheckResult{Name: n, Error: runCheck(m[n])})
	}
	return out
}

func runCheck(c func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("check panicked: %v", r)
		}
	}()
	return c()
}
