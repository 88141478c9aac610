package config

import (
	"github.com/proctor-run/proctor/registry"
)

// checkTargets runs e's kind's RefChecker, when its references resolved.
func (ld *load) checkTargets(cfg *Config, e *registry.Entry) {
	rc, ok := ld.kindOf(e).(registry.RefChecker)
	if !ok || e.Spec == nil {
		return
	}
	for _, r := range e.Refs {
		if _, ok := cfg.Entries[r.To]; !ok {
			return // reported as missing
		}
	}
	rc.CheckRefs(e, func(id registry.ID) (*registry.Entry, bool) { t, ok := cfg.Entries[id]; return t, ok },
		func(pos registry.Pos, field, msg string) { ld.fail(pos, e.ID, field, "%s", msg) })
}
