package registry

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"
	"sort"

	"gopkg.in/yaml.v3"
)

// digest hashes what an entry means, not how it is written: its YAML with
// positions, comments, styles and key order left out (meta too: the runtime
// ignores it, so editing a comment must not restart anything), plus the
// bytes of every source it uses. Two loads of an unchanged entry give the
// same digest; a reload relies on that to leave it alone.
func digest(e *Entry) string { return digestExcept(e, "meta") }

// digestExcept is digest leaving out the named top-level fields.
func digestExcept(e *Entry, skip ...string) string {
	h := sha256.New()
	writeStr(h, e.Kind)
	if e.Node != nil {
		writeNode(h, e.Node, skip)
	}
	for _, s := range e.Sources {
		writeStr(h, s.Field)
		writeStr(h, s.Path)
		writeStr(h, string(s.Bytes))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func writeStr(h hash.Hash, s string) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

func writeNode(h hash.Hash, n *yaml.Node, skip []string) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		h.Write([]byte{'s'})
		writeStr(h, n.ShortTag())
		writeStr(h, n.Value)
	case yaml.SequenceNode:
		h.Write([]byte{'l'})
		writeStr(h, "")
		for _, c := range n.Content {
			writeNode(h, c, nil)
		}
		h.Write([]byte{'e'})
	case yaml.MappingNode:
		h.Write([]byte{'m'})
		idx := make([]int, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if slices.Contains(skip, n.Content[i].Value) {
				continue
			}
			idx = append(idx, i)
		}
		sort.SliceStable(idx, func(a, b int) bool { return n.Content[idx[a]].Value < n.Content[idx[b]].Value })
		for _, i := range idx {
			writeNode(h, n.Content[i], nil)
			writeNode(h, n.Content[i+1], nil)
		}
		h.Write([]byte{'e'})
	default:
		h.Write([]byte{'?'})
	}
}
