package runtime

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/promreg"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// The runtime's part of hot upgrade (registry/upgrade.go holds the
// contract): Runtime.Upgrade finds the kind that knows how (an Upgrader)
// and counts the outcome, in runner_upgrades_total{entry,result} and in the
// reload under way.

// upgradeSpawned lets every registry.SpawnedUpgrader kind offer the new
// definitions to its own processes (reload step 5).
func (rt *Runtime) upgradeSpawned(ctx context.Context) {
	for _, name := range rt.opts.Kinds.Names() {
		k, _ := rt.opts.Kinds.Kind(name)
		if u, ok := k.(registry.SpawnedUpgrader); ok {
			u.UpgradeSpawned(ctx, rt.env)
		}
	}
}

var _ registry.UpgradeLookup = (*Runtime)(nil)

// Upgrade moves pid, a process of an earlier definition of the entry id,
// to the definition in force, when id's kind is an registry.Upgrader; registry.UpgradeNone
// when it cannot (the caller restarts the process instead). The outcome is
// counted in runner_upgrades_total and in the reload under way.
func (rt *Runtime) Upgrade(ctx context.Context, pid process.PID, id registry.ID) (registry.UpgradeResult, error) {
	s, ok := rt.snap.Load().slots[id]
	if !ok {
		return registry.UpgradeNone, fmt.Errorf("upgrade %s: %w", id, registry.ErrNoEntry)
	}
	k, _ := rt.opts.Kinds.Kind(s.entry.Kind)
	u, ok := k.(registry.Upgrader)
	if !ok {
		return registry.UpgradeNone, nil
	}
	res, err := u.Upgrade(ctx, rt.env, pid, s.entry)
	rt.upgrades.add(id, res, s.entry.ShowError(err))
	if res == registry.UpgradeOK {
		// A spawned process now runs the definition in force: no longer
		// outdated.
		rt.spawned.upgraded(id, pid, s.entry.Digest)
	}
	return res, err
}

// upgradeLog counts upgrades: every one in runner_upgrades_total, and
// those of the reload under way (between begin and end) for its status.
// Upgrades are asked for from kinds' goroutines: it has its own lock.
type upgradeLog struct {
	total *prometheus.CounterVec

	mu     sync.Mutex
	active bool
	counts UpgradeCounts
	first  map[string]string // the first error of each entry and result
}

// UpgradeCounts are the upgrades of one reload, by result.
type UpgradeCounts struct {
	OK      int `json:"ok"`
	Timeout int `json:"timeout"`
	Failed  int `json:"failed"`
}

// Total is the number of upgrades counted.
func (c UpgradeCounts) Total() int { return c.OK + c.Timeout + c.Failed }

func newUpgradeLog(reg *prometheus.Registry) *upgradeLog {
	l := &upgradeLog{total: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "runner_upgrades_total",
		Help: "Hot upgrades of processes (on_reload: upgrade), by entry and result: ok, timeout (restarted on the new code), failed (the new code raised).",
	}, []string{"entry", "result"}))}
	return l
}

// add counts an upgrade; msg is its error as shown (Entry.ShowError: a
// script's error may be of any size, and the reload's warnings reach
// /healthz).
func (l *upgradeLog) add(id registry.ID, res registry.UpgradeResult, msg string) {
	if l == nil || res == registry.UpgradeNone {
		return
	}
	l.total.WithLabelValues(string(id), string(res)).Inc()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active {
		return
	}
	switch res {
	case registry.UpgradeOK:
		l.counts.OK++
		return
	case registry.UpgradeTimeout:
		l.counts.Timeout++
	case registry.UpgradeFailed:
		l.counts.Failed++
	}
	key := fmt.Sprintf("%s: %s", id, res)
	if _, ok := l.first[key]; !ok && len(l.first) < maxSettleWarnings {
		l.first[key] = msg
	}
}

func (l *upgradeLog) begin() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active, l.counts, l.first = true, UpgradeCounts{}, map[string]string{}
}

// end closes the reload's collection and returns its counts and one
// warning line per entry and result that was not ok, sorted.
func (l *upgradeLog) end() (UpgradeCounts, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, first := l.counts, l.first
	l.active, l.counts, l.first = false, UpgradeCounts{}, nil
	var warnings []string
	for _, key := range slices.Sorted(maps.Keys(first)) {
		w := "upgrade " + key
		switch {
		case first[key] != "":
			w += ": " + first[key]
		}
		warnings = append(warnings, w)
	}
	return c, warnings
}
