package pgscope

import (
	"hash/maphash"
	"math/bits"

	"github.com/proctor-run/proctor/process"
)

// groupView is the published, immutable state of one group: every member
// (with multiplicity, local members first, then each remote node's) and the
// local members alone. Readers share it; nobody writes to it once published.
type groupView struct {
	name  string
	all   []process.PID
	local []process.PID
}

// The group index is a persistent hash array mapped trie: an update copies
// only the path from the root to the changed leaf (a few small nodes), so the
// loop can publish a new version after every command in O(log32 n) time and
// readers keep using whichever version they loaded, without locks. A plain
// map would have to be copied whole on every new or vanished group, which is
// O(groups) per join.
type hnode struct {
	bitmap uint32
	slots  []hslot
}

// hslot is either a sub-trie or a leaf bucket of views whose keys share a
// full 64-bit hash (almost always exactly one).
type hslot struct {
	sub  *hnode
	leaf *hleaf
}

type hleaf struct {
	hash  uint64
	views []*groupView
}

const hbits = 5

var hseed = maphash.MakeSeed()

func hashGroup(g string) uint64 { return maphash.String(hseed, g) }

func (n *hnode) get(h uint64, key string) *groupView {
	for shift := uint(0); n != nil; shift += hbits {
		bit := uint32(1) << ((h >> shift) & 31)
		if n.bitmap&bit == 0 {
			return nil
		}
		s := &n.slots[bits.OnesCount32(n.bitmap&(bit-1))]
		if s.sub != nil {
			n = s.sub
			continue
		}
		if s.leaf.hash != h {
			return nil
		}
		for _, v := range s.leaf.views {
			if v.name == key {
				return v
			}
		}
		return nil
	}
	return nil
}

// with returns a trie holding v under v.name (replacing any view of that
// name) and whether the key is new.
func (n *hnode) with(h uint64, v *groupView, shift uint) (*hnode, bool) {
	bit := uint32(1) << ((h >> shift) & 31)
	idx := 0
	if n != nil {
		idx = bits.OnesCount32(n.bitmap & (bit - 1))
	}
	if n == nil || n.bitmap&bit == 0 {
		out := &hnode{slots: make([]hslot, 0, 1)}
		if n != nil {
			out.bitmap = n.bitmap
			out.slots = make([]hslot, 0, len(n.slots)+1)
			out.slots = append(out.slots, n.slots[:idx]...)
		}
		out.bitmap |= bit
		out.slots = append(out.slots, hslot{leaf: &hleaf{hash: h, views: []*groupView{v}}})
		if n != nil {
			out.slots = append(out.slots, n.slots[idx:]...)
		}
		return out, true
	}
	out := &hnode{bitmap: n.bitmap, slots: make([]hslot, len(n.slots))}
	copy(out.slots, n.slots)
	s := &out.slots[idx]
	if s.sub != nil {
		sub, added := s.sub.with(h, v, shift+hbits)
		s.sub = sub
		return out, added
	}
	if s.leaf.hash == h {
		views := make([]*groupView, len(s.leaf.views), len(s.leaf.views)+1)
		copy(views, s.leaf.views)
		for i, old := range views {
			if old.name == v.name {
				views[i] = v
				s.leaf = &hleaf{hash: h, views: views}
				return out, false
			}
		}
		s.leaf = &hleaf{hash: h, views: append(views, v)}
		return out, true
	}
	// Two different hashes share this slot: push the old leaf one level
	// down and insert beside it.
	old := s.leaf
	sub := &hnode{bitmap: uint32(1) << ((old.hash >> (shift + hbits)) & 31), slots: []hslot{{leaf: old}}}
	sub, _ = sub.with(h, v, shift+hbits)
	s.leaf, s.sub = nil, sub
	return out, true
}

// without returns a trie without key and whether it was there. A nil
// result is the empty trie.
func (n *hnode) without(h uint64, key string, shift uint) (*hnode, bool) {
	if n == nil {
		return nil, false
	}
	bit := uint32(1) << ((h >> shift) & 31)
	if n.bitmap&bit == 0 {
		return n, false
	}
	idx := bits.OnesCount32(n.bitmap & (bit - 1))
	s := n.slots[idx]
	if s.sub != nil {
		sub, removed := s.sub.without(h, key, shift+hbits)
		if !removed {
			return n, false
		}
		if sub == nil {
			return n.dropSlot(bit, idx), true
		}
		// A sub-trie left with a single leaf collapses into this level.
		if len(sub.slots) == 1 && sub.slots[0].leaf != nil {
			s = hslot{leaf: sub.slots[0].leaf}
		} else {
			s = hslot{sub: sub}
		}
		return n.replaceSlot(idx, s), true
	}
	if s.leaf.hash != h {
		return n, false
	}
	for i, v := range s.leaf.views {
		if v.name != key {
			continue
		}
		if len(s.leaf.views) == 1 {
			return n.dropSlot(bit, idx), true
		}
		views := make([]*groupView, 0, len(s.leaf.views)-1)
		views = append(views, s.leaf.views[:i]...)
		views = append(views, s.leaf.views[i+1:]...)
		return n.replaceSlot(idx, hslot{leaf: &hleaf{hash: h, views: views}}), true
	}
	return n, false
}

func (n *hnode) dropSlot(bit uint32, idx int) *hnode {
	if len(n.slots) == 1 {
		return nil
	}
	out := &hnode{bitmap: n.bitmap &^ bit, slots: make([]hslot, 0, len(n.slots)-1)}
	out.slots = append(out.slots, n.slots[:idx]...)
	out.slots = append(out.slots, n.slots[idx+1:]...)
	return out
}

func (n *hnode) replaceSlot(idx int, s hslot) *hnode {
	out := &hnode{bitmap: n.bitmap, slots: make([]hslot, len(n.slots))}
	copy(out.slots, n.slots)
	out.slots[idx] = s
	return out
}

// each calls fn for every view, in no particular order.
func (n *hnode) each(fn func(v *groupView)) {
	if n == nil {
		return
	}
	for i := range n.slots {
		if s := &n.slots[i]; s.sub != nil {
			s.sub.each(fn)
		} else {
			for _, v := range s.leaf.views {
				fn(v)
			}
		}
	}
}
