package pool

import "github.com/proctor-run/proctor/registry"

var _ registry.OutdatedCounter = (*Pool)(nil)

// CountOutdated implements registry.OutdatedCounter: the routees that run
// another definition than the routee entry in force, because their
// renewal failed (or a reload is renewing them right now). They count as
// outdated processes of the routee entry until a renewal succeeds.
func (p *Pool) CountOutdated(add func(def registry.ID, n int)) {
	s := p.snap.Load()
	if s == nil {
		return
	}
	e, ok := p.env.Entries.Entry(s.routee)
	if !ok {
		return // the routee entry is gone: nothing newer to run
	}
	cur, n := e.Digest, 0
	for _, d := range s.digests {
		if d != cur {
			n++
		}
	}
	add(s.routee, n)
}
