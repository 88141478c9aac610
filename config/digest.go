package config

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/proctor-run/proctor/registry"
)

// digest hashes what an entry means, not how it is written: its YAML node
// n with positions, comments, styles and key order left out, and the
// top-level fields in skip (the loader always skips meta: the runtime
// ignores it, so editing a comment must not restart anything), plus the
// bytes of every source it uses. Two loads of an unchanged entry give the same digest; a reload
// relies on that to leave it alone. The entry is written out in a
// canonical form into buf (reusing its memory: a load digests every entry
// twice) and hashed once; the buffer is returned for the next digest.
func digest(buf []byte, e *registry.Entry, n *yaml.Node, skip ...string) (string, []byte) {
	b := buf[:0]
	b = appendStr(b, e.Kind)
	if n != nil {
		b = appendNode(b, n, skip)
	}
	for _, s := range e.Sources {
		b = appendStr(b, s.Field)
		b = appendStr(b, s.Path)
		d := s.Digest
		if s.Memos == nil && d == ([sha256.Size]byte{}) {
			d = sha256.Sum256(s.Bytes) // built in Go, without its digest
		}
		b = append(b, d[:]...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), b
}

func appendStr(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func appendNode(b []byte, n *yaml.Node, skip []string) []byte {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		b = append(b, 's')
		b = appendStr(b, n.ShortTag())
		b = appendStr(b, n.Value)
	case yaml.SequenceNode:
		b = append(b, 'l')
		b = appendStr(b, "")
		for _, c := range n.Content {
			b = appendNode(b, c, nil)
		}
		b = append(b, 'e')
	case yaml.MappingNode:
		b = append(b, 'm')
		idx := make([]int, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if slices.Contains(skip, n.Content[i].Value) {
				continue
			}
			idx = append(idx, i)
		}
		slices.SortStableFunc(idx, func(x, y int) int { return strings.Compare(n.Content[x].Value, n.Content[y].Value) })
		for _, i := range idx {
			b = appendNode(b, n.Content[i], nil)
			b = appendNode(b, n.Content[i+1], nil)
		}
		b = append(b, 'e')
	default:
		b = append(b, '?')
	}
	return b
}
