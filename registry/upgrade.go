package registry

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/process"
)

// Hot upgrade (on_reload: upgrade, docs/reload.md): a reload that changes
// a definition may move a running process to the new code in place — same
// PID, same mailbox, its state handed over by the script — instead of
// restarting it. What runs the process asks for it (the process.lua entry's
// own instance, a supervisor for its child) through Runtime.Upgrade, which
// finds the kind that knows how (an Upgrader), and counts the outcome: in
// runner_upgrades_total{entry,result} and in the reload's status.

// UpgradeResult is how an upgrade ended, the result label of
// runner_upgrades_total.
type UpgradeResult string

const (
	// UpgradeOK: the process runs the new code, same PID, same mailbox.
	UpgradeOK UpgradeResult = "ok"
	// UpgradeTimeout: the process did not upgrade within its
	// upgrade_timeout; the caller restarts it on the new code.
	UpgradeTimeout UpgradeResult = "timeout"
	// UpgradeFailed: the new code's upgrade or main raised at once; the
	// process has crashed and its supervisor restarts it.
	UpgradeFailed UpgradeResult = "failed"
	// UpgradeNone: no upgrade was made (the process is not upgradable,
	// or it exited first); the caller restarts it as on_reload: restart.
	// It is not counted.
	UpgradeNone UpgradeResult = ""
)

// UpgradeResults lists the results runner_upgrades_total counts.
var UpgradeResults = []UpgradeResult{UpgradeOK, UpgradeTimeout, UpgradeFailed}

// Upgrader is implemented by Template kinds whose processes can move to a
// changed definition in place (process.lua). Upgrade offers e to pid, a
// process of an earlier definition of e, and returns once it has upgraded,
// failed, or e's upgrade timeout (or ctx) ended the wait; err says why it
// failed.
type Upgrader interface {
	Upgrade(ctx context.Context, env *Env, pid process.PID, e *Entry) (UpgradeResult, error)
}

// SpawnedUpgrader is implemented by Upgrader kinds whose processes may
// have no instance to offer them a new definition: processes a script
// spawned outside any supervisor that asked to be upgraded. After a
// reload that changed definitions, the runtime calls UpgradeSpawned,
// which offers each such process of a changed entry the definition in
// force (through Env.Entries' Upgrade, so that it is counted) and returns
// once every offer has an outcome.
type SpawnedUpgrader interface {
	UpgradeSpawned(ctx context.Context, env *Env)
}

// upgradeSpawned lets every SpawnedUpgrader kind offer the new
// definitions to its own processes (reload step 5).
func (rt *Runtime) upgradeSpawned(ctx context.Context) {
	for _, name := range rt.opts.Kinds.Names() {
		k, _ := rt.opts.Kinds.Kind(name)
		if u, ok := k.(SpawnedUpgrader); ok {
			u.UpgradeSpawned(ctx, rt.env)
		}
	}
}

// UpgradeLookup is the part of Env.Entries that upgrades; a supervisor
// asks for its children's upgrades through it.
type UpgradeLookup interface {
	Upgrade(ctx context.Context, pid process.PID, id ID) (UpgradeResult, error)
}

var _ UpgradeLookup = (*Runtime)(nil)

// UpgradeTarget is one process to upgrade: pid, of an earlier definition
// of the entry ID.
type UpgradeTarget struct {
	PID process.PID
	ID  ID
}

// UpgradeAll offers every target the definition in force of its entry,
// all at once, through env.Entries (an UpgradeLookup; without one nothing
// is upgraded), and returns each outcome, in order, once every one has
// one. Failures are logged. A supervisor upgrades its children, a pool
// its routees, a kind the processes scripts spawned, this way.
func UpgradeAll(ctx context.Context, env *Env, targets []UpgradeTarget) []UpgradeResult {
	results := make([]UpgradeResult, len(targets))
	up, ok := env.Entries.(UpgradeLookup)
	if !ok {
		return results
	}
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := up.Upgrade(ctx, t.PID, t.ID)
			if err != nil && env.Logger != nil {
				env.EntryLogger(t.ID).Warn("upgrade", "pid", t.PID.String(), "result", string(res), "error", err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	return results
}

// Upgraded reports whether r leaves the process on the new definition:
// upgraded, or crashed on it (its supervisor restarts it there).
func (r UpgradeResult) Upgraded() bool { return r == UpgradeOK || r == UpgradeFailed }

// Upgrade moves pid, a process of an earlier definition of the entry id,
// to the definition in force, when id's kind is an Upgrader; UpgradeNone
// when it cannot (the caller restarts the process instead). The outcome is
// counted in runner_upgrades_total and in the reload under way.
func (rt *Runtime) Upgrade(ctx context.Context, pid process.PID, id ID) (UpgradeResult, error) {
	s, ok := rt.snap.Load().slots[id]
	if !ok {
		return UpgradeNone, fmt.Errorf("upgrade %s: %w", id, ErrNoEntry)
	}
	k, _ := rt.opts.Kinds.Kind(s.entry.Kind)
	u, ok := k.(Upgrader)
	if !ok {
		return UpgradeNone, nil
	}
	res, err := u.Upgrade(ctx, rt.env, pid, s.entry)
	rt.env.upgrades.add(id, res, err)
	if res == UpgradeOK {
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
	l := &upgradeLog{total: RegisterCollector(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "runner_upgrades_total",
		Help: "Hot upgrades of processes (on_reload: upgrade), by entry and result: ok, timeout (restarted on the new code), failed (the new code raised).",
	}, []string{"entry", "result"}))}
	return l
}

func (l *upgradeLog) add(id ID, res UpgradeResult, err error) {
	if l == nil || res == UpgradeNone {
		return
	}
	l.total.WithLabelValues(string(id), string(res)).Inc()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active {
		return
	}
	switch res {
	case UpgradeOK:
		l.counts.OK++
		return
	case UpgradeTimeout:
		l.counts.Timeout++
	case UpgradeFailed:
		l.counts.Failed++
	}
	key := fmt.Sprintf("%s: %s", id, res)
	if _, ok := l.first[key]; !ok && len(l.first) < maxSettleWarnings {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
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
