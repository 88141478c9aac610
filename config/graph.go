package config

import (
	"container/heap"
	"slices"
	"strings"

	"github.com/proctor-run/proctor/registry"
)

// The dependency graph of a Config: cfg.Deps maps each entry to the
// entries it needs (its references and depends_on), sorted. A valid
// configuration is acyclic; order places it, and checkCycles names the
// cycles of one that is not.

// order returns the entries in dependency order (Kahn's algorithm, ties
// broken by ID so the order is stable from one load to the next: of the
// entries whose dependencies are all placed, the least ID goes next).
// Entries on a dependency cycle are left out. It works on the entries'
// ranks in ID order, so the heap compares integers, not strings.
func order(cfg *Config) []registry.ID {
	ids := sortedIDs(cfg)
	rank := make(map[registry.ID]int, len(ids))
	for i, id := range ids {
		rank[id] = i
	}
	pending := make([]int, len(ids))
	users := make([][]int, len(ids))
	ready := &rankHeap{}
	for i, id := range ids {
		deps := cfg.Deps[id]
		pending[i] = len(deps)
		for _, dep := range deps {
			if j, ok := rank[dep]; ok {
				users[j] = append(users[j], i)
			}
		}
		if len(deps) == 0 {
			*ready = append(*ready, i) // ascending: already a heap
		}
	}
	out := make([]registry.ID, 0, len(ids))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		out = append(out, ids[i])
		for _, u := range users[i] {
			pending[u]--
			if pending[u] == 0 {
				heap.Push(ready, u)
			}
		}
	}
	return out
}

// sortedIDs returns every entry ID of cfg in order.
func sortedIDs(cfg *Config) []registry.ID {
	ids := make([]registry.ID, 0, len(cfg.Entries))
	for id := range cfg.Entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// rankHeap is a min-heap of ranks.
type rankHeap []int

func (h rankHeap) Len() int           { return len(h) }
func (h rankHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h rankHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rankHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *rankHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// checkCycles reports every dependency cycle (one error per strongly
// connected component, listing one cycle through it). It reports whether
// any was found.
func (ld *load) checkCycles(cfg *Config) bool {
	found := false
	for _, comp := range sccs(cfg) {
		if len(comp) == 1 {
			continue
		}
		found = true
		in := make(map[registry.ID]bool, len(comp))
		for _, id := range comp {
			in[id] = true
		}
		start := slices.Min(comp)
		cycle := findCycle(cfg, start, in)
		e := cfg.Entries[start]
		field := ""
		pos := e.Pos
		for _, r := range e.Refs {
			if len(cycle) > 1 && r.To == cycle[1] {
				field, pos = r.Field, r.Pos
				break
			}
		}
		parts := make([]string, len(cycle))
		for i, id := range cycle {
			parts[i] = string(id)
		}
		ld.fail(pos, start, field, "dependency cycle: %s", strings.Join(parts, " -> "))
	}
	return found
}

// findCycle returns a shortest path start -> ... -> start within the
// component in (a breadth-first search).
func findCycle(cfg *Config, start registry.ID, in map[registry.ID]bool) []registry.ID {
	prev := map[registry.ID]registry.ID{}
	queue := []registry.ID{start}
	visited := map[registry.ID]bool{start: true}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, next := range cfg.Deps[cur] {
			if !in[next] {
				continue
			}
			if next == start {
				var back []registry.ID // cur back to start's successor
				for at := cur; at != start; at = prev[at] {
					back = append(back, at)
				}
				slices.Reverse(back)
				path := append([]registry.ID{start}, back...)
				return append(path, start)
			}
			if !visited[next] {
				visited[next] = true
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return []registry.ID{start}
}

// sccs returns the strongly connected components of the dependency graph
// (Tarjan's algorithm, iterative so a long chain cannot overflow the stack).
func sccs(cfg *Config) [][]registry.ID {
	index := map[registry.ID]int{}
	low := map[registry.ID]int{}
	onStack := map[registry.ID]bool{}
	var stack []registry.ID
	var out [][]registry.ID
	next := 0
	type frame struct {
		id registry.ID
		i  int
	}
	for _, root := range sortedIDs(cfg) {
		if _, done := index[root]; done {
			continue
		}
		work := []frame{{id: root}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(work) > 0 {
			f := &work[len(work)-1]
			deps := cfg.Deps[f.id]
			if f.i < len(deps) {
				w := deps[f.i]
				f.i++
				if _, seen := index[w]; !seen {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					work = append(work, frame{id: w})
				} else if onStack[w] {
					low[f.id] = min(low[f.id], index[w])
				}
				continue
			}
			v := f.id
			work = work[:len(work)-1]
			if len(work) > 0 {
				p := work[len(work)-1].id
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				i := len(stack) - 1 // v is on the stack, near its top
				for stack[i] != v {
					i--
				}
				comp := slices.Clone(stack[i:])
				slices.Reverse(comp)
				for _, w := range comp {
					onStack[w] = false
				}
				stack = stack[:i]
				out = append(out, comp)
			}
		}
	}
	return out
}
