package config

import (
	"gopkg.in/yaml.v3"
)

// resolveAliases replaces every alias in n by the node it names and
// expands YAML merge keys (`<<: *defaults`, or a list of them), so the
// decoders see plain mappings. Keys written in a mapping win over merged
// ones, and earlier merged mappings over later ones, as YAML specifies.
// Merged fields keep the positions where they were written (at the
// anchor), so an error in one points there. aliased says whether n has
// aliases at all; without them it is a tree, and each node is reached once
// anyway.
func resolveAliases(n *yaml.Node, aliased bool) {
	var seen map[*yaml.Node]bool
	if aliased {
		seen = map[*yaml.Node]bool{}
	}
	resolveNode(n, seen)
}

// resolveNode visits each node once, however many aliases name it, so a
// document of aliases of aliases ("billion laughs") stays linear.
func resolveNode(n *yaml.Node, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	if seen != nil {
		seen[n] = true
	}
	for i, c := range n.Content {
		for c != nil && c.Kind == yaml.AliasNode && c.Alias != nil {
			c = c.Alias
		}
		n.Content[i] = c
		resolveNode(c, seen)
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	var merged []*yaml.Node
	own := map[string]bool{}
	kept := n.Content[:0:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "!!merge" || k.Tag == "") {
			switch v.Kind {
			case yaml.MappingNode:
				merged = append(merged, v)
				continue
			case yaml.SequenceNode:
				all := true
				for _, e := range v.Content {
					all = all && e.Kind == yaml.MappingNode
				}
				if all {
					merged = append(merged, v.Content...)
					continue
				}
			}
		}
		own[k.Value] = true
		kept = append(kept, k, v)
	}
	for _, m := range merged {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k := m.Content[i]
			if own[k.Value] {
				continue
			}
			own[k.Value] = true
			kept = append(kept, k, m.Content[i+1])
		}
	}
	n.Content = kept
}
