package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/registry"
)

// ReloadSummary says what a reload did, by entry ID.
type ReloadSummary struct {
	Added     []registry.ID
	Updated   []registry.ID // applied in place or restarted
	Restarted []registry.ID // the subset of Updated (and dependents) that was stopped and started again
	Removed   []registry.ID
	Unchanged []registry.ID
	// Failed are entries that should run but did not start; the rest of
	// the reload still applied.
	Failed []registry.ID
	// Outdated counts the processes left running an older definition once
	// the reload applied: spawned by scripts outside any supervisor (or
	// children that say on_reload: keep), by entry.
	Outdated   int
	OutdatedBy map[registry.ID]int
	// NotStarted counts the processes the reload should have moved to a
	// changed definition whose new code did not start (Env.RenewalFailed):
	// they run their old code (a pool's routee) or none (a supervisor's
	// child, retried as after a crash), by definition; Warnings say so,
	// one line per definition with its first error.
	NotStarted   int
	NotStartedBy map[registry.ID]int
	// Upgrades counts the processes moved to a changed definition in
	// place (on_reload: upgrade), by result; a warning line per entry
	// whose upgrades timed out or failed.
	Upgrades UpgradeCounts
	Warnings []string
	// unrecorded: a quiet reload that changed nothing, and whose files
	// are as the last reload reported them (see reload).
	unrecorded bool
}

func (s ReloadSummary) String() string {
	msg := fmt.Sprintf("added=%d updated=%d removed=%d unchanged=%d", len(s.Added), len(s.Updated), len(s.Removed), len(s.Unchanged))
	if s.NotStarted > 0 {
		msg += fmt.Sprintf(" not_started=%d", s.NotStarted)
	}
	if u := s.Upgrades; u.Total() > 0 {
		msg += fmt.Sprintf(" upgraded=%d upgrade_timeouts=%d upgrade_failures=%d", u.OK, u.Timeout, u.Failed)
	}
	// restarted: the updated entries that were stopped and started again,
	// and the unchanged ones restarted with an entry they hold (a
	// router.group with its scope), which no other count shows.
	if len(s.Restarted) > 0 {
		msg += fmt.Sprintf(" restarted=%d", len(s.Restarted))
	}
	return msg
}

// changed reports whether a reload changed anything: an entry added,
// updated (or restarted), removed, or one that should run and did not
// start, or renewals that failed or upgraded. A reload of files as they
// were loaded changes nothing.
func (s ReloadSummary) changed() bool {
	return len(s.Added)+len(s.Updated)+len(s.Restarted)+len(s.Removed)+len(s.Failed) > 0 ||
		s.NotStarted > 0 || s.Upgrades.Total() > 0 || len(s.Warnings) > 0
}

// Reload loads paths and applies the result. An invalid configuration
// changes nothing: the Errors are returned and counted as rejected. A load
// that failed for a reason that may pass (Transient) or was abandoned with
// ctx changes nothing either, and is not counted: the caller retries.
func (rt *Runtime) Reload(ctx context.Context, l *config.Loader, paths ...string) (*config.Config, ReloadSummary, error) {
	return rt.reload(ctx, l, false, paths...)
}

// reload is Reload. With quiet (the watcher's look again at what it has
// just started to watch, which nobody asked for) an applied reload that
// changed nothing is neither counted nor recorded in the history, unless
// the last attempt was a rejection (the files were fixed meanwhile: the
// rejection is no longer what holds): the last reload stays the last one
// that did something. Nor is a rejection with the errors of the last
// attempt's (the files as broken as they were): its error then also
// holds errRejectedAgain.
func (rt *Runtime) reload(ctx context.Context, l *config.Loader, quiet bool, paths ...string) (*config.Config, ReloadSummary, error) {
	defer rt.history.begin()()
	cfg, err := l.LoadContext(ctx, paths...)
	if err != nil {
		if ctx.Err() == nil && !config.Transient(err) {
			a := rejectedAttempt(err)
			if last, ok := rt.LastReload(); quiet && ok && last.Result == ReloadRejected && last.allErrors == a.allErrors {
				return nil, ReloadSummary{}, errors.Join(errRejectedAgain, err)
			}
			rt.reloads.WithLabelValues(ReloadRejected).Inc()
			rt.history.record(a)
		}
		return nil, ReloadSummary{}, err
	}
	sum, err := rt.applyConfig(ctx, cfg, quiet)
	if err != nil {
		return nil, sum, err
	}
	return cfg, sum, nil
}

// errRejectedAgain marks a quiet reload's rejection that repeats the last
// attempt's (see reload).
var errRejectedAgain = errors.New("rejected again, as the last reload was")

// Apply puts cfg in force in place of the running configuration: entries
// are matched by ID and compared by Digest. Removed entries stop (reverse
// dependency order); changed ones are updated in place when their instance
// is a registry.Updater that accepts the change, and restarted otherwise; added
// ones start; unchanged ones are not touched (same instance, same state).
//
// A change propagates along definition references: an entry that
// instantiates a changed definition (a supervisor's child, a pool's
// routee) counts as changed too, so its kind can respawn what runs the old
// definition. An entry that holds a running reference to a restarted entry
// (a router.group's scope) is restarted after it, because its kind may
// hold the old instance; an explicit depends_on alone does not restart
// the dependent, since processes reach each other by registered name.
func (rt *Runtime) Apply(ctx context.Context, cfg *config.Config) (ReloadSummary, error) {
	return rt.applyConfig(ctx, cfg, false)
}

// applyConfig is Apply; with quiet, an apply that changed nothing is not
// counted or recorded (see reload).
func (rt *Runtime) applyConfig(ctx context.Context, cfg *config.Config, quiet bool) (ReloadSummary, error) {
	defer rt.history.begin()()
	// When ctx ends first, do returns while the loop may still run the
	// apply: the summary comes back through a channel that nobody need
	// read, never through a variable both would touch.
	res := make(chan ReloadSummary, 1)
	if err := rt.do(ctx, func() {
		sum := rt.apply(ctx, cfg)
		if quiet && !sum.changed() {
			if last, ok := rt.LastReload(); !ok || last.Result != ReloadRejected {
				sum.unrecorded = true
				res <- sum
				return
			}
		}
		// Not for a quiet look again that changed nothing: the processes
		// left on old code were warned about by the reload that left them.
		if sum.Outdated > 0 {
			rt.log.Warn("reload left processes on old code: they run their old definition until they exit or are renewed",
				"outdated", sum.Outdated, "entries", outdatedText(sum.OutdatedBy))
		}
		// Recorded on the loop, before any exit it reports: a crash of
		// what the reload started amends this attempt (settle.go).
		rt.reloads.WithLabelValues(ReloadApplied).Inc()
		at := time.Now()
		rt.history.record(ReloadAttempt{Time: at, Result: ReloadApplied,
			Added: len(sum.Added), Updated: len(sum.Updated), Removed: len(sum.Removed), Unchanged: len(sum.Unchanged),
			Outdated: sum.Outdated, NotStarted: sum.NotStarted, Upgrades: sum.Upgrades, Warnings: sum.Warnings})
		rt.reports.settles.begin(at, sum)
		res <- sum
	}); err != nil {
		return ReloadSummary{}, err
	}
	return <-res, nil
}

func (rt *Runtime) apply(ctx context.Context, cfg *config.Config) ReloadSummary {
	var sum ReloadSummary
	old := rt.snap.Load()
	changed := map[registry.ID]bool{}
	// Entries whose lifecycle alone changed keep their instance: the root
	// supervisor reads the restart policy when it needs it, and the run set
	// below starts or stops what auto_start and depends_on now ask for.
	lifecycleOnly := map[registry.ID]bool{}
	// An entry whose kind changed is replaced: its running instance is the
	// old kind's, which has no business being offered the new kind's spec.
	kindChanged := map[registry.ID]bool{}
	for id, e := range cfg.Entries {
		if s, ok := old.slots[id]; !ok {
			sum.Added = append(sum.Added, id)
		} else if s.entry.Kind != e.Kind {
			changed[id] = true
			kindChanged[id] = true
		} else if s.entry.Digest != e.Digest {
			changed[id] = true
			if e.BodyDigest != "" && s.entry.BodyDigest == e.BodyDigest {
				lifecycleOnly[id] = true
			}
		}
	}
	for id := range old.slots {
		if _, ok := cfg.Entries[id]; !ok {
			sum.Removed = append(sum.Removed, id)
		}
	}
	// Users of a changed definition are changed too, transitively.
	users := map[registry.ID][]registry.ID{}
	for id, e := range cfg.Entries {
		for _, r := range e.Refs {
			if r.Mode == registry.RefDefinition {
				users[r.To] = append(users[r.To], id)
			}
		}
	}
	queue := make([]registry.ID, 0, len(changed))
	for id := range changed {
		if !lifecycleOnly[id] {
			queue = append(queue, id)
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, u := range users[id] {
			// A user whose own change is lifecycle-only now has a real
			// change too: it must be offered the update, not just kept.
			if _, existed := old.slots[u]; existed && (!changed[u] || lifecycleOnly[u]) {
				changed[u] = true
				delete(lifecycleOnly, u)
				queue = append(queue, u)
			}
		}
	}
	run := runSet(cfg, rt.opts.Kinds)
	oldRun := rt.runSet

	// 1. Stop what is removed, and what changed but is no longer wanted
	// running, in reverse dependency order of the old configuration.
	stopOld := map[registry.ID]bool{}
	for _, id := range sum.Removed {
		stopOld[id] = true
	}
	for id := range old.slots {
		if _, still := cfg.Entries[id]; still && !run[id] && (isLive(old.slots[id]) || rt.waiting[id] != nil) {
			stopOld[id] = true
		}
	}
	rt.stopInOrder(old, stopOld)
	for _, id := range sum.Removed {
		rt.clearFailedCheck(id)
	}

	// 2. Publish the new configuration, carrying over every kept state, so
	// kinds updating or starting below resolve the new definitions.
	slots := make(map[registry.ID]*slot, len(cfg.Entries))
	for id, e := range cfg.Entries {
		s := &slot{entry: e}
		if os, ok := old.slots[id]; ok && !stopOld[id] {
			s.state.Store(os.state.Load())
		} else {
			s.set(EntryState{Status: StatusDefined})
		}
		slots[id] = s
	}
	snap := &snapshot{cfg: cfg, slots: slots}
	rt.snap.Store(snap)
	rt.runSet = run

	// 3. Update changed running entries in place, or restart them. From
	// here to the end of step 5, kinds report the renewals whose new code
	// did not start.
	rt.reports.renewals.begin()
	rt.upgrades.begin()
	restart := map[registry.ID]bool{}
	for _, id := range cfg.Order {
		if !changed[id] {
			continue
		}
		sum.Updated = append(sum.Updated, id)
		s := slots[id]
		st := s.state.Load()
		if !isLive(s) {
			continue
		}
		if !kindChanged[id] && (lifecycleOnly[id] || rt.updateInPlace(ctx, id, s.entry, st)) {
			continue
		}
		restart[id] = true
	}
	// Dependents holding a running reference (other than depends_on) to a
	// restarted entry restart with it, unless they find it anew each time
	// they use it (an http.route's to).
	for _, id := range cfg.Order {
		if restart[id] || !isLive(slots[id]) {
			continue
		}
		for _, r := range cfg.Entries[id].Refs {
			if r.Mode == registry.RefRunning && !r.PerUse && restart[r.To] && !strings.HasPrefix(r.Field, "lifecycle.depends_on") {
				restart[id] = true
				break
			}
		}
	}
	for id := range cfg.Entries {
		if !changed[id] && !restart[id] {
			if _, existed := old.slots[id]; existed {
				sum.Unchanged = append(sum.Unchanged, id)
			}
		}
	}
	rt.stopInOrder(rt.snap.Load(), restart)
	for id := range restart {
		sum.Restarted = append(sum.Restarted, id)
	}

	// 4. Start, dependencies first, what must run and does not: added,
	// changed and restarted entries, and those newly needed. An unchanged
	// entry that is not running (a task that completed, one the root gave
	// up on) is left as it is; one that failed is tried again when a
	// dependency of it was just started. A start that waits for a task
	// waits on; one whose dependency cannot run fails, and what needs it
	// with it; the rest of the reload stands.
	started := map[registry.ID]bool{}
	for _, id := range cfg.Order {
		_, existed := old.slots[id]
		if !run[id] || isLive(slots[id]) {
			continue
		}
		if existed && !changed[id] && !restart[id] && oldRun[id] &&
			(rt.waiting[id] != nil || slots[id].state.Load().Status != StatusFailed || !rt.depStarted(cfg, id, started)) {
			continue
		}
		if err := rt.launch(ctx, snap, id); err != nil {
			sum.Failed = append(sum.Failed, id)
			continue
		}
		if rt.waiting[id] == nil {
			started[id] = true
		}
	}
	rt.kick()

	// 5. Whatever runs instances of a changed definition renews them.
	if len(changed) > 0 || len(sum.Removed) > 0 {
		rt.refresh(ctx, snap)
	}
	if len(changed) > 0 {
		rt.upgradeSpawned(ctx)
	}
	sum.NotStartedBy, sum.Warnings = rt.reports.renewals.end()
	var upgradeWarnings []string
	sum.Upgrades, upgradeWarnings = rt.upgrades.end()
	sum.Warnings = append(sum.Warnings, upgradeWarnings...)
	for _, n := range sum.NotStartedBy {
		sum.NotStarted += n
	}
	if sum.NotStarted > 0 {
		rt.log.Warn("reload applied, but the new code did not start for some processes: they run their old code, or none",
			"not_started", sum.NotStarted, "entries", outdatedText(sum.NotStartedBy), "first", sum.Warnings[0])
	}
	sum.OutdatedBy = rt.outdatedAll()
	for _, n := range sum.OutdatedBy {
		sum.Outdated += n
	}
	for _, l := range [][]registry.ID{sum.Added, sum.Updated, sum.Restarted, sum.Removed, sum.Unchanged, sum.Failed} {
		slices.Sort(l)
	}
	return sum
}

// refresh offers every running registry.Refresher the reloaded configuration: the
// instances of entries, then those only the directory knows (trees nested
// in supervisors, or started by scripts), each once.
func (rt *Runtime) refresh(ctx context.Context, snap *snapshot) {
	rt.rangeInstances(snap, func(what string, e *registry.Entry, inst registry.Instance) {
		r, ok := inst.(registry.Refresher)
		if !ok {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, rt.env.StartTimeout(e))
		defer cancel()
		defer func() {
			if p := recover(); p != nil {
				rt.log.Error("refresh panicked", "instance", what, "panic", p)
			}
		}()
		if err := r.Refresh(rctx); err != nil {
			rt.log.Warn("renewing what runs a changed definition failed", "instance", what, "error", err)
		}
	})
}

// outdatedText lists counts by entry, sorted, for a log line.
func outdatedText(by map[registry.ID]int) string {
	ids := make([]registry.ID, 0, len(by))
	for id := range by {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", id, by[id])
	}
	return b.String()
}

// isLive reports whether s has an instance the runtime is responsible for:
// running, or failed and waiting for the root supervisor's restart.
func isLive(s *slot) bool {
	st := s.state.Load()
	return st.Instance != nil && (st.Status == StatusRunning || st.Status == StatusStarting)
}

// updateInPlace offers the new entry to the running instance; it reports
// whether the instance took it.
func (rt *Runtime) updateInPlace(ctx context.Context, id registry.ID, e *registry.Entry, st *EntryState) (applied bool) {
	u, ok := st.Instance.(registry.Updater)
	if !ok || st.Status != StatusRunning {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, rt.env.StartTimeout(e))
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			rt.log.Error("update panicked; restarting the entry", "entry", string(id), "panic", r)
			applied = false
		}
	}()
	applied, err := u.Update(ctx, e)
	if err != nil {
		rt.log.Warn("update in place failed; restarting the entry", "entry", string(id), "error", e.ShowError(err))
		return false
	}
	if applied {
		rt.log.Debug("entry updated in place", "entry", string(id))
	}
	return applied
}

// stopInOrder stops the entries of set that run, in reverse dependency
// order of snap's configuration.
func (rt *Runtime) stopInOrder(snap *snapshot, set map[registry.ID]bool) {
	if len(set) == 0 {
		return
	}
	ids := make([]registry.ID, 0, len(set))
	seen := map[registry.ID]bool{}
	for _, id := range snap.cfg.Order {
		if set[id] {
			ids = append(ids, id)
			seen[id] = true
		}
	}
	for id := range set {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	slices.Reverse(ids)
	rt.stopEntries(snap, ids)
}

// depStarted reports whether one of id's running dependencies was just
// started: an entry that failed for want of it gets its chance again.
func (rt *Runtime) depStarted(cfg *config.Config, id registry.ID, started map[registry.ID]bool) bool {
	for _, r := range cfg.Entries[id].Refs {
		if r.Mode == registry.RefRunning && started[r.To] {
			return true
		}
	}
	return false
}
