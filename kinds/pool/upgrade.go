package pool

import (
	"context"

	"github.com/proctor-run/proctor/registry"
)

// upgradeOutdated offers the routee entry in force, whose digest is cur,
// to the routees of the slots on another definition, all at once
// (registry.UpgradeAll), before renew replaces them: a routee that can
// take it in place (its entry says on_reload: upgrade) keeps its PID and
// mailbox, so what it accepted is answered by the old code or the new.
// Slots whose routee upgraded (or whose new code raised: the routee
// crashed, and its exit refills the slot on the new code) are marked
// current; renew spawns new routees for the rest.
func (p *Pool) upgradeOutdated(cur string) {
	var stale []*slot
	for _, s := range p.slots {
		if s.digest != cur && !s.pid.IsZero() {
			stale = append(stale, s)
		}
	}
	if len(stale) == 0 || cur == "" {
		return
	}
	targets := make([]registry.UpgradeTarget, len(stale))
	for i, s := range stale {
		targets[i] = registry.UpgradeTarget{PID: s.pid, ID: p.spec.Routee}
	}
	upgraded := 0
	for i, res := range registry.UpgradeAll(context.Background(), p.env, targets) {
		if res.Upgraded() {
			stale[i].digest, stale[i].failedOn = cur, ""
			upgraded++
		}
	}
	if upgraded > 0 {
		p.log.Info("routees upgraded in place", "routee", string(p.spec.Routee), "upgraded", upgraded)
	}
}
