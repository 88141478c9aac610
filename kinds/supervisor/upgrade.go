package supervisor

import (
	"context"
	"sync"

	"github.com/proctor-run/proctor/registry"
)

// upgradeOutdated offers the new definition to the stale children that
// can take it in place (on_reload: upgrade in the child's spec or in its
// entry) (see registry.Upgrader), all at once, and returns
// the rest to restart: those that are not upgradable or did not upgrade
// within their upgrade timeout. A child whose new code raised has crashed:
// its exit restarts it on the new code as any failure does.
func (s *Supervisor) upgradeOutdated(stale []*child) []*child {
	up, ok := s.env.Entries.(registry.UpgradeLookup)
	if !ok {
		return stale
	}
	results := make([]registry.UpgradeResult, len(stale))
	var wg sync.WaitGroup
	for i, c := range stale {
		// Whether c can upgrade is its kind's to say: its spec asked
		// (Upgradable at the spawn), or its entry says on_reload: upgrade.
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := up.Upgrade(context.Background(), c.pid, c.spec.Process)
			if err != nil {
				s.log.Warn("child upgrade", "child", c.spec.ID, "result", string(res), "error", err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	rest := stale[:0:0]
	upgraded := 0
	for i, c := range stale {
		switch results[i] {
		case registry.UpgradeOK, registry.UpgradeFailed:
			if e, ok := s.env.Entries.Entry(c.spec.Process); ok {
				c.digest = e.Digest
			}
			upgraded++
		default:
			rest = append(rest, c)
		}
	}
	if upgraded > 0 {
		s.log.Info("children upgraded in place", "upgraded", upgraded)
	}
	return rest
}
