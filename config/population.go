package config

import (
	"fmt"
	"slices"

	"github.com/proctor-run/proctor/registry"
)

// How many processes a configuration starts is bounded as a whole: each
// count has its own bound, but nesting multiplies them (a partition of
// 1,000 partitions of 1,000 workers is a million processes, one more level
// a billion), so a file within every field's bound could still start more
// processes than the node can hold.

// checkProcesses counts the processes each entry's instance starts, its
// nested children's included, and those of the entries that start with
// the runtime; a count past the bound is an error at the field where it
// is passed. cfg must be acyclic (cfg.Order holds every entry).
func (ld *load) checkProcesses(cfg *Config) {
	limit := ld.bounds[registry.ProcessesBound]
	procs := make(map[registry.ID]int, len(cfg.Entries))
	over := map[registry.ID]bool{} // reported, or past the bound through a child that is
	for _, id := range cfg.Order {
		e := cfg.Entries[id]
		n := 1
		var worst registry.Spawn // the one that takes n past the bound
		if sp, ok := ld.kindOf(e).(registry.Spawner); ok && e.Spec != nil {
			for _, s := range sp.Spawns(e.Spec) {
				if over[s.To] {
					over[id] = true
				}
				if n <= limit {
					worst = s
				}
				n = min(n+mulCapped(s.Count, procs[s.To], limit), limit+1)
			}
		}
		procs[id] = n
		if n > limit && !over[id] {
			over[id] = true
			pos := e.Pos
			if i := slices.IndexFunc(e.Refs, func(r registry.Ref) bool { return r.Field == worst.Field && r.To == worst.To }); i >= 0 {
				pos = e.Refs[i].Pos
			}
			ld.fail(pos, id, worst.Field, "starts more than %d processes with its nested children (%d × %s, which starts %s); raise the bound with --limit %s=N",
				limit, worst.Count, worst.To, countText(procs[worst.To], limit), registry.ProcessesBound)
		}
	}
	total := 0
	var biggest registry.ID
	for _, id := range cfg.Order {
		e := cfg.Entries[id]
		if !e.Lifecycle.AutoStart || over[id] {
			continue
		}
		total = min(total+procs[id], limit+1)
		if biggest == "" || procs[id] > procs[biggest] {
			biggest = id
		}
	}
	if total > limit {
		e := cfg.Entries[biggest]
		ld.fail(e.Pos, biggest, "lifecycle.auto_start", "the entries that start with the runtime start more than %d processes together, %d of them this one's; raise the bound with --limit %s=N",
			limit, procs[biggest], registry.ProcessesBound)
	}
}

// kindOf returns e's registered kind, or nil.
func (ld *load) kindOf(e *registry.Entry) registry.Kind {
	k, _ := ld.kinds.Kind(e.Kind)
	return k
}

// mulCapped returns a×b, or limit+1 when that is larger.
func mulCapped(a, b, limit int) int {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > (limit+1)/b {
		return limit + 1
	}
	return min(a*b, limit+1)
}

func countText(n, limit int) string {
	if n > limit {
		return fmt.Sprintf("more than %d", limit)
	}
	return fmt.Sprint(n)
}
