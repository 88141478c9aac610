package supervisor

import (
	"context"

	"github.com/proctor-run/proctor/registry"
)

// upgradeOutdated offers the new definition to the stale children, all at
// once (registry.UpgradeAll), and returns the rest to restart: those whose
// spec says on_reload: restart (a child's own on_reload wins over its
// entry's), those that cannot upgrade (whether one can is its kind's to
// say: on_reload: upgrade in the child's spec, Upgradable at its spawn, or
// in its entry when the child's spec gives none) and those that did not
// within their upgrade timeout. A child whose new code raised has crashed:
// its exit restarts it on the new code as any failure does.
func (s *Supervisor) upgradeOutdated(stale []*child) []*child {
	rest := stale[:0:0]
	var offered []*child
	for _, c := range stale {
		if c.spec.OnReload == ReloadRestart {
			rest = append(rest, c)
		} else {
			offered = append(offered, c)
		}
	}
	if len(offered) == 0 {
		return rest
	}
	targets := make([]registry.UpgradeTarget, len(offered))
	for i, c := range offered {
		targets[i] = registry.UpgradeTarget{PID: c.pid, ID: c.spec.Process}
	}
	results := registry.UpgradeAll(context.Background(), s.env, targets)
	upgraded := 0
	for i, c := range offered {
		if !results[i].Upgraded() {
			rest = append(rest, c)
			continue
		}
		upgraded++
		if e, ok := s.env.Entries.Entry(c.spec.Process); ok {
			c.digest = e.Digest
		}
	}
	if upgraded > 0 {
		s.log.Info("children upgraded in place", "upgraded", upgraded)
	}
	return rest
}
