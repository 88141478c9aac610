package runtime

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// A reload renews what runs a changed definition (see registry.Refresher): a pool
// spawns new routees, a supervisor restarts its children. When the new
// code does not start (its init raises, say), a pool keeps the routee on
// the old code and a supervisor retries the child as it would a crash, so
// the reload applied and yet the new code runs nowhere. The kinds report
// each such start with Env.RenewalFailed; the runtime collects the reports
// of one reload and says in its status for how many processes the new code
// did not start, instead of "applied" and nothing more.

// renewalLog collects the reports of one reload. Kinds reach it through
// Env.RenewalFailed, from their own goroutines: it has its own lock.
type renewalLog struct {
	mu     sync.Mutex
	active bool
	seen   map[renewalKey]bool
	by     map[registry.ID]int    // processes whose new code did not start, by definition
	first  map[registry.ID]string // the first error of each definition
}

// renewalKey names one process a renewal should have replaced: the
// instance that renews (a pool, a supervisor) and its slot there (a slot
// number, a child ID), so retries of the same one count once.
type renewalKey struct {
	by   process.PID
	slot string
}

func (l *renewalLog) begin() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active = true
	l.seen, l.by, l.first = map[renewalKey]bool{}, map[registry.ID]int{}, map[registry.ID]string{}
}

func (l *renewalLog) add(k renewalKey, def registry.ID, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active || l.seen[k] {
		return
	}
	l.seen[k] = true
	l.by[def]++
	if _, ok := l.first[def]; !ok && err != nil {
		l.first[def] = err.Error()
	}
}

// end closes the reload's collection and returns its counts by definition
// and one warning line per definition, sorted.
func (l *renewalLog) end() (by map[registry.ID]int, warnings []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active = false
	by, first := l.by, l.first
	l.seen, l.by, l.first = nil, nil, nil
	for _, id := range slices.Sorted(maps.Keys(by)) {
		w := fmt.Sprintf("%s: the new code did not start for %d %s", id, by[id], plural(by[id], "process", "processes"))
		if e := first[id]; e != "" {
			w += ": " + e
		}
		warnings = append(warnings, w)
	}
	return by, warnings
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// instanceOutdated counts the processes that running instances report on
// an older definition, by definition.
func (rt *Runtime) instanceOutdated(snap *snapshot) map[registry.ID]int {
	out := map[registry.ID]int{}
	rt.rangeInstances(snap, func(_ string, _ *registry.Entry, inst registry.Instance) {
		if c, ok := inst.(registry.OutdatedCounter); ok {
			c.CountOutdated(func(def registry.ID, n int) {
				if n > 0 {
					out[def] += n
				}
			})
		}
	})
	return out
}

// rangeInstances calls fn once for every running instance: those of
// entries first, in dependency order (e is their entry), then those only
// the directory knows (e nil), each once.
func (rt *Runtime) rangeInstances(snap *snapshot, fn func(what string, e *registry.Entry, inst registry.Instance)) {
	seen := map[process.PID]bool{}
	for _, id := range snap.cfg.Order {
		s := snap.slots[id]
		if st := s.state.Load(); st.Status == StatusRunning && st.Instance != nil && !seen[st.Instance.PID()] {
			seen[st.Instance.PID()] = true
			fn(string(id), s.entry, st.Instance)
		}
	}
	var rest []registry.Instance
	rt.env.Instances.Range(func(inst registry.Instance) bool {
		if !seen[inst.PID()] {
			seen[inst.PID()] = true
			rest = append(rest, inst)
		}
		return true
	})
	for _, inst := range rest {
		fn(inst.PID().String(), nil, inst)
	}
}

// reports is the runtime's registry.Reporter: what kinds tell it about a
// reload, collected for the reload's summary and its settling.
type reports struct {
	renewals *renewalLog
	settles  *settleLog
	entries  registry.Lookup
}

func (r *reports) RenewalFailed(by process.PID, slot string, def registry.ID, err error) {
	r.renewals.add(renewalKey{by: by, slot: slot}, def, err)
}

func (r *reports) Crashed(def registry.ID, err error) {
	e, _ := r.entries.Entry(def)
	r.settles.failed(def, e, err)
}
