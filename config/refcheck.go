package config

import (
	"cmp"
	"slices"

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

// checkSets runs each kind's SetChecker over the kind's entries that
// decoded, in ID order.
func (ld *load) checkSets(cfg *Config) {
	byKind := map[string][]*registry.Entry{}
	for _, e := range cfg.Entries {
		if e.Spec == nil {
			continue
		}
		if _, ok := ld.kindOf(e).(registry.SetChecker); ok {
			byKind[e.Kind] = append(byKind[e.Kind], e)
		}
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		es := byKind[k]
		slices.SortFunc(es, func(a, b *registry.Entry) int { return cmp.Compare(a.ID, b.ID) })
		sc := ld.kindOf(es[0]).(registry.SetChecker)
		sc.CheckSet(es, func(e *registry.Entry, pos registry.Pos, field, msg string) { ld.fail(pos, e.ID, field, "%s", msg) })
	}
}
