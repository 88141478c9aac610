package config

import (
	"math"

	"gopkg.in/yaml.v3"
)

// DefaultMaxAliasNodes is how many YAML nodes the aliases of a whole
// configuration may add when expanded, all files and documents together:
// a "billion laughs" file is an error, not an out-of-memory, and so are
// many small ones.
const DefaultMaxAliasNodes = 1 << 20

// maxDepth bounds how deeply a document may nest, aliases followed.
const maxDepth = 1000

// expansion measures what a document becomes once its aliases are
// replaced by what they name, without building it: each node's expanded
// size is computed once and remembered, so a document of aliases of
// aliases costs what it is written in, not what it expands to.
type expansion struct {
	memo   map[*yaml.Node]measure
	active map[*yaml.Node]bool // nodes being expanded: an alias to one is a cycle
	cycle  *yaml.Node          // the alias that names a node it sits in
	deep   bool
}

// shape is what the loader needs to know of a document before it walks
// it: how many nodes its aliases add when expanded (the expanded size less
// the nodes as written, saturating past math.MaxInt64/2), the alias that
// closes a cycle if one does, whether it nests deeper than maxDepth once
// expanded (the charge is meaningless with either), and whether it has
// aliases at all.
type shape struct {
	charge  int64
	cycle   *yaml.Node
	deep    bool
	aliased bool
}

func measureDoc(doc *yaml.Node) shape {
	n, depth, aliased := written(doc)
	if !aliased {
		return shape{deep: depth > maxDepth}
	}
	x := &expansion{memo: map[*yaml.Node]measure{}, active: map[*yaml.Node]bool{}}
	total := x.size(doc, 0)
	if x.cycle != nil || x.deep {
		return shape{cycle: x.cycle, deep: x.deep, aliased: true}
	}
	return shape{charge: max(total-n, 0), aliased: true}
}

const saturated = math.MaxInt64 / 2

type measure struct {
	size   int64
	height int
}

// size returns the expanded size of n and records deep when its
// expanded height, measured from the document, passes maxDepth. Heights
// are remembered with sizes: a chain of anchors each naming the last is
// shallow where it is written and deep once expanded.
func (x *expansion) size(n *yaml.Node, depth int) int64 {
	if n == nil || x.cycle != nil || x.deep {
		return 0
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		if x.active[n.Alias] {
			x.cycle = n
			return 0
		}
		return x.size(n.Alias, depth)
	}
	if m, ok := x.memo[n]; ok {
		if depth+m.height > maxDepth {
			x.deep = true
		}
		return m.size
	}
	if depth > maxDepth {
		x.deep = true
		return 0
	}
	x.active[n] = true
	m := measure{size: 1}
	for _, c := range n.Content {
		m.size = min(m.size+x.size(c, depth+1), saturated)
		m.height = max(m.height, 1+x.height(c))
	}
	delete(x.active, n)
	x.memo[n] = m
	return m.size
}

// height returns the expanded height of n, which size has measured.
func (x *expansion) height(n *yaml.Node) int {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return x.memo[n].height
}

// written counts the nodes of doc as written (an alias is one node) and
// measures how deep they nest, and reports whether there is an alias.
func written(doc *yaml.Node) (count int64, depth int, aliased bool) {
	type item struct {
		n     *yaml.Node
		depth int
	}
	stack := []item{{doc, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.n == nil {
			continue
		}
		count++
		depth = max(depth, it.depth)
		if it.n.Kind == yaml.AliasNode {
			aliased = true
			continue
		}
		for _, c := range it.n.Content {
			stack = append(stack, item{c, it.depth + 1})
		}
	}
	return count, depth, aliased
}
