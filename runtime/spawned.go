package runtime

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// Processes a script spawned outside any supervisor keep the code they
// were started with when a reload changes their entry, as in OTP: nothing
// may restart them behind their spawner's back. The runtime remembers each
// such process with the digest of the definition it runs, so those left on
// an old definition can be counted (outdated, in /v1/entries and
// runner_outdated_processes) and warned about after a reload.

// spawnIndex holds the live unmanaged instances of each entry, with the
// digest they were spawned from. Spawns come from any goroutine, so it
// has its own lock; it never calls out while holding it. Dead processes
// are dropped when the index has doubled since it was last swept, so a
// script spawning short-lived processes in a loop does not grow it.
type spawnIndex struct {
	mu      sync.Mutex
	byEntry map[registry.ID]map[process.PID]string
	n       int
	sweepAt int
}

const minSweep = 1024

func (x *spawnIndex) add(node *process.Node, id registry.ID, pid process.PID, digest string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byEntry == nil {
		x.byEntry = map[registry.ID]map[process.PID]string{}
	}
	m := x.byEntry[id]
	if m == nil {
		m = map[process.PID]string{}
		x.byEntry[id] = m
	}
	m[pid] = digest
	x.n++
	if x.n > max(x.sweepAt, minSweep) {
		x.sweep(node)
		x.sweepAt = 2 * x.n
	}
}

// upgraded records that pid, if the index holds it, now runs digest.
func (x *spawnIndex) upgraded(id registry.ID, pid process.PID, digest string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if m := x.byEntry[id]; m != nil {
		if _, ok := m[pid]; ok {
			m[pid] = digest
		}
	}
}

// sweep drops the processes that have exited; x.mu is held.
func (x *spawnIndex) sweep(node *process.Node) {
	x.n = 0
	for id, m := range x.byEntry {
		maps.DeleteFunc(m, func(pid process.PID, _ string) bool { return !node.Alive(pid) })
		if len(m) == 0 {
			delete(x.byEntry, id)
		}
		x.n += len(m)
	}
}

// outdated counts, for entry id whose definition in force has digest
// current (empty: the entry is gone), the live processes spawned from
// another one.
func (x *spawnIndex) outdated(node *process.Node, id registry.ID, current string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for pid, d := range x.byEntry[id] {
		if d != current && node.Alive(pid) {
			n++
		}
	}
	return n
}

// all counts the outdated processes of every entry against digests (the
// configuration in force), sweeping the dead on the way. Entries without
// any are left out.
func (x *spawnIndex) all(node *process.Node, digests func(registry.ID) string) map[registry.ID]int {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sweep(node)
	x.sweepAt = 2 * x.n
	out := map[registry.ID]int{}
	for id, m := range x.byEntry {
		cur := digests(id)
		for _, d := range m {
			if d != cur {
				out[id]++
			}
		}
	}
	return out
}

// outdatedCollector is runner_outdated_processes{entry}: the processes of
// each entry still running an older definition, counted at scrape time.
type outdatedCollector struct {
	rt   *Runtime
	desc *prometheus.Desc
}

func (c *outdatedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *outdatedCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.rt.outdatedAll()
	for _, id := range slices.Sorted(maps.Keys(counts)) {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[id]), string(id))
	}
}

// outdatedAll counts every entry's outdated processes against the
// configuration in force: those scripts spawned, and those running
// instances keep (OutdatedCounter).
func (rt *Runtime) outdatedAll() map[registry.ID]int {
	snap := rt.snap.Load()
	out := rt.spawned.all(rt.opts.Node, func(id registry.ID) string {
		if s, ok := snap.slots[id]; ok {
			return s.entry.Digest
		}
		return ""
	})
	for id, n := range rt.instanceOutdated(snap) {
		out[id] += n
	}
	return out
}
