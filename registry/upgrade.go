package registry

import (
	"context"
	"sync"

	"github.com/proctor-run/proctor/process"
)

// Hot upgrade (on_reload: upgrade, docs/reload.md): a reload that changes
// a definition may move a running process to the new code in place — same
// PID, same mailbox, its state handed over by the script — instead of
// restarting it. What runs the process asks for it (the process.lua entry's
// own instance, a supervisor for its child) through Env.Entries (an UpgradeLookup: the runtime), which
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

// UpgradeLookup is the part of Env.Entries that upgrades; a supervisor
// asks for its children's upgrades through it.
type UpgradeLookup interface {
	Upgrade(ctx context.Context, pid process.PID, id ID) (UpgradeResult, error)
}

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
