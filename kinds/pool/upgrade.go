package pool

import (
	"context"
	"sync"

	"github.com/proctor-run/proctor/registry"
)

// upgradeOutdated offers the routee entry in force, whose digest is cur,
// to the routees of the slots on another definition, all at once, before
// renew replaces them: a routee that can take it in place (its entry says
// on_reload: upgrade) keeps its PID and mailbox, so what it accepted is
// answered by the old code or the new. Slots whose routee upgraded (or
// whose new code raised: the routee crashed, and its exit refills the
// slot on the new code) are marked current; renew spawns new routees for
// the rest.
func (p *Pool) upgradeOutdated(cur string) {
	up, ok := p.env.Entries.(registry.UpgradeLookup)
	if !ok || cur == "" {
		return
	}
	var stale []*slot
	for _, s := range p.slots {
		if s.digest != cur && !s.pid.IsZero() {
			stale = append(stale, s)
		}
	}
	results := make([]registry.UpgradeResult, len(stale))
	var wg sync.WaitGroup
	for i, s := range stale {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := up.Upgrade(context.Background(), s.pid, p.spec.Routee)
			if err != nil {
				p.log.Warn("routee upgrade", "slot", s.n, "result", string(res), "error", err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	upgraded := 0
	for i, s := range stale {
		if r := results[i]; r == registry.UpgradeOK || r == registry.UpgradeFailed {
			s.digest, s.failedOn = cur, ""
			upgraded++
		}
	}
	if upgraded > 0 {
		p.log.Info("routees upgraded in place", "routee", string(p.spec.Routee), "upgraded", upgraded)
	}
}
