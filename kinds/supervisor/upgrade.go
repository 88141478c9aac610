package supervisor

import (
	"context"

	"github.com/proctor-run/proctor/registry"
)

// upgradeOutdated offers the new definition to the stale children, all at
// once (registry.UpgradeAll), and returns the rest to restart: those that
// cannot upgrade (whether one can is its kind's to say: on_reload: upgrade
// in the child's spec, Upgradable at its spawn, or in its entry) or did
// not within their upgrade timeout. A child whose new code raised has
// crashed: its exit restarts it on the new code as any failure does.
func (s *Supervisor) upgradeOutdated(stale []*child) []*child {
	if len(stale) == 0 {
		return stale
	}
	targets := make([]registry.UpgradeTarget, len(stale))
	for i, c := range stale {
		targets[i] = registry.UpgradeTarget{PID: c.pid, ID: c.spec.Process}
	}
	results := registry.UpgradeAll(context.Background(), s.env, targets)
	rest := stale[:0:0]
	for i, c := range stale {
		if !results[i].Upgraded() {
			rest = append(rest, c)
		} else if e, ok := s.env.Entries.Entry(c.spec.Process); ok {
			c.digest = e.Digest
		}
	}
	if n := len(stale) - len(rest); n > 0 {
		s.log.Info("children upgraded in place", "upgraded", n)
	}
	return rest
}
