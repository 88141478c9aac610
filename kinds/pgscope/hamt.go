package pgscope

import (
	"hash/maphash"
	"math/bits"
	"slices"
	"sync/atomic"
	"unsafe"
)

// groupCell is a group's place in the published index. The loop stores
// each new version of the group's membership in cur; readers load it. A
// cell stays in the index while its group is empty (cur nil: the group does
// not exist for readers) until a sweep removes the vacant cells in bulk, so
// a group that empties and fills again, as when a process joins and leaves
// over and over, changes one pointer and not the index.
type groupCell struct {
	name string
	hash uint64
	cur  atomic.Pointer[groupView]
}

// view returns the group's current membership, nil when it is empty.
func (c *groupCell) view() *groupView {
	if c == nil {
		return nil
	}
	return c.cur.Load()
}

// The group index is a persistent hash array mapped trie: an update copies
// only the path from the root to the changed slot (a few small nodes), so
// the loop can publish a new version in O(log32 n) time and readers keep
// using whichever version they loaded, without locks. A plain map would
// have to be copied whole on every new or vanished group, which is
// O(groups) per join. The trie changes only when a cell is added or swept:
// membership changes go to the cells.
//
// A slot is one pointer: to a sub-trie, to a cell (its bit set in
// leafmap) or to a bucket of cells whose 64-bit hashes are equal (its bit
// set in collmap), so a copied node of 32 entries is 256 bytes and a cell
// needs no node of its own.
type hnode struct {
	// batch is the htransient epoch that made the node, 0 for none: a
	// batch changes its own nodes in place. Only the loop reads it; the
	// field fills the node's size class (48 bytes), so it costs nothing.
	batch   uint64
	bitmap  uint32
	leafmap uint32
	collmap uint32
	slots   []unsafe.Pointer
}

// hbucket holds the cells of one full 64-bit hash; it is immutable.
type hbucket struct {
	hash  uint64
	cells []*groupCell
}

// slotKind says what a slot points to.
type slotKind uint8

const (
	slotSub slotKind = iota
	slotCell
	slotBucket
)

const hbits = 5

var hseed = maphash.MakeSeed()

func hashGroup(g string) uint64 { return maphash.String(hseed, g) }

func (n *hnode) kind(bit uint32) slotKind {
	switch {
	case n.leafmap&bit != 0:
		return slotCell
	case n.collmap&bit != 0:
		return slotBucket
	}
	return slotSub
}

// slotHash is the full hash of a cell or bucket slot.
func slotHash(p unsafe.Pointer, k slotKind) uint64 {
	if k == slotCell {
		return (*groupCell)(p).hash
	}
	return (*hbucket)(p).hash
}

// get returns the cell of key (hash h), or nil.
func (n *hnode) get(h uint64, key string) *groupCell {
	for shift := uint(0); n != nil; shift += hbits {
		bit := uint32(1) << ((h >> shift) & 31)
		if n.bitmap&bit == 0 {
			return nil
		}
		p := n.slots[bits.OnesCount32(n.bitmap&(bit-1))]
		if n.leafmap&bit != 0 {
			if c := (*groupCell)(p); c.hash == h && c.name == key {
				return c
			}
			return nil
		}
		if n.collmap&bit != 0 {
			b := (*hbucket)(p)
			if b.hash != h {
				return nil
			}
			for _, c := range b.cells {
				if c.name == key {
					return c
				}
			}
			return nil
		}
		n = (*hnode)(p)
	}
	return nil
}

func (n *hnode) copyWith(idx int, p unsafe.Pointer, k slotKind, bit uint32) *hnode {
	out := &hnode{bitmap: n.bitmap, leafmap: n.leafmap &^ bit, collmap: n.collmap &^ bit, slots: make([]unsafe.Pointer, len(n.slots))}
	copy(out.slots, n.slots)
	out.slots[idx] = p
	out.mark(k, bit)
	return out
}

func (n *hnode) mark(k slotKind, bit uint32) {
	switch k {
	case slotCell:
		n.leafmap |= bit
	case slotBucket:
		n.collmap |= bit
	}
}

// single returns a node holding one cell or bucket slot at level shift.
func single(p unsafe.Pointer, k slotKind, shift uint) *hnode {
	bit := uint32(1) << ((slotHash(p, k) >> shift) & 31)
	out := &hnode{bitmap: bit, slots: []unsafe.Pointer{p}}
	out.mark(k, bit)
	return out
}

// with returns a trie holding c (c.hash is h) in place of any cell of the
// same name, and whether the name is new.
func (n *hnode) with(h uint64, c *groupCell, shift uint) (*hnode, bool) {
	return n.withIn(nil, h, c, shift)
}

// htransient is a batch of insertions that copies each node at most once:
// the nodes the batch made are published only with the root at its end, so
// until then it changes them in place. Many new groups at once (a peer's
// full state, a join of many groups) then copy the root and the nodes below
// it once per batch, not once per group. The batch ends (reset) when its
// root is published: from then on readers may hold its nodes.
//
// The batch's nodes carry its epoch, unique over every batch of the
// process (a set of them cost a map insertion per node made): the zero
// value is a batch that has made nothing yet.
type htransient struct{ epoch uint64 }

// hepochs numbers the batches.
var hepochs atomic.Uint64

func (t *htransient) owns(n *hnode) bool {
	return t != nil && t.epoch != 0 && n.batch == t.epoch
}

// made records a node the batch made; it returns n.
func (t *htransient) made(n *hnode) *hnode {
	if t != nil {
		if t.epoch == 0 {
			t.epoch = hepochs.Add(1)
		}
		n.batch = t.epoch
	}
	return n
}

// reset ends the batch: the nodes it made are no longer its own.
func (t *htransient) reset() { t.epoch = 0 }

// set is copyWith for a batch: a node of the batch's own changes in place.
func (t *htransient) set(n *hnode, idx int, p unsafe.Pointer, k slotKind, bit uint32) *hnode {
	if !t.owns(n) {
		return t.made(n.copyWith(idx, p, k, bit))
	}
	n.slots[idx] = p
	n.leafmap &^= bit
	n.collmap &^= bit
	n.mark(k, bit)
	return n
}

// withIn is with within the batch t (nil: none, every node on the path
// is copied).
func (n *hnode) withIn(t *htransient, h uint64, c *groupCell, shift uint) (*hnode, bool) {
	c.hash = h
	bit := uint32(1) << ((h >> shift) & 31)
	if n == nil {
		return t.made(single(unsafe.Pointer(c), slotCell, shift)), true
	}
	idx := bits.OnesCount32(n.bitmap & (bit - 1))
	if n.bitmap&bit == 0 {
		if t.owns(n) {
			n.slots = slices.Insert(n.slots, idx, unsafe.Pointer(c))
			n.bitmap |= bit
			n.leafmap |= bit
			return n, true
		}
		out := &hnode{bitmap: n.bitmap | bit, leafmap: n.leafmap | bit, collmap: n.collmap, slots: make([]unsafe.Pointer, len(n.slots)+1)}
		copy(out.slots, n.slots[:idx])
		out.slots[idx] = unsafe.Pointer(c)
		copy(out.slots[idx+1:], n.slots[idx:])
		return t.made(out), true
	}
	p, k := n.slots[idx], n.kind(bit)
	switch {
	case k == slotSub:
		sub, added := (*hnode)(p).withIn(t, h, c, shift+hbits)
		return t.set(n, idx, unsafe.Pointer(sub), slotSub, bit), added
	case slotHash(p, k) != h:
		// Two hashes share this slot: push the old one a level down and
		// insert beside it.
		sub, _ := t.made(single(p, k, shift+hbits)).withIn(t, h, c, shift+hbits)
		return t.set(n, idx, unsafe.Pointer(sub), slotSub, bit), true
	case k == slotCell:
		old := (*groupCell)(p)
		if old.name == c.name {
			return t.set(n, idx, unsafe.Pointer(c), slotCell, bit), false
		}
		b := &hbucket{hash: h, cells: []*groupCell{old, c}}
		return t.set(n, idx, unsafe.Pointer(b), slotBucket, bit), true
	}
	old := (*hbucket)(p)
	b := &hbucket{hash: h, cells: make([]*groupCell, 0, len(old.cells)+1)}
	added := true
	for _, e := range old.cells {
		if e.name == c.name {
			added = false
			continue
		}
		b.cells = append(b.cells, e)
	}
	b.cells = append(b.cells, c)
	return t.set(n, idx, unsafe.Pointer(b), slotBucket, bit), added
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
	p, k := n.slots[idx], n.kind(bit)
	switch k {
	case slotSub:
		sub, removed := (*hnode)(p).without(h, key, shift+hbits)
		if !removed {
			return n, false
		}
		if sub == nil {
			return n.dropSlot(bit, idx), true
		}
		// A sub-trie left with a single cell or bucket collapses into
		// this level.
		if len(sub.slots) == 1 && sub.leafmap|sub.collmap != 0 {
			return n.copyWith(idx, sub.slots[0], sub.kind(sub.bitmap), bit), true
		}
		return n.copyWith(idx, unsafe.Pointer(sub), slotSub, bit), true
	case slotCell:
		if c := (*groupCell)(p); c.hash != h || c.name != key {
			return n, false
		}
		return n.dropSlot(bit, idx), true
	}
	b := (*hbucket)(p)
	if b.hash != h {
		return n, false
	}
	at := -1
	for i, c := range b.cells {
		if c.name == key {
			at = i
		}
	}
	switch {
	case at < 0:
		return n, false
	case len(b.cells) == 2:
		return n.copyWith(idx, unsafe.Pointer(b.cells[1-at]), slotCell, bit), true
	}
	rest := &hbucket{hash: h, cells: make([]*groupCell, 0, len(b.cells)-1)}
	rest.cells = append(rest.cells, b.cells[:at]...)
	rest.cells = append(rest.cells, b.cells[at+1:]...)
	return n.copyWith(idx, unsafe.Pointer(rest), slotBucket, bit), true
}

func (n *hnode) dropSlot(bit uint32, idx int) *hnode {
	if len(n.slots) == 1 {
		return nil
	}
	out := &hnode{bitmap: n.bitmap &^ bit, leafmap: n.leafmap &^ bit, collmap: n.collmap &^ bit, slots: make([]unsafe.Pointer, len(n.slots)-1)}
	copy(out.slots, n.slots[:idx])
	copy(out.slots[idx:], n.slots[idx+1:])
	return out
}

// each calls fn for every cell, vacant ones included, in no particular
// order.
func (n *hnode) each(fn func(c *groupCell)) {
	if n == nil {
		return
	}
	b := n.bitmap
	for _, p := range n.slots {
		bit := b & -b
		b &^= bit
		switch n.kind(bit) {
		case slotSub:
			(*hnode)(p).each(fn)
		case slotCell:
			fn((*groupCell)(p))
		default:
			for _, c := range (*hbucket)(p).cells {
				fn(c)
			}
		}
	}
}

// eachGroup calls fn for every group with members, with the version of it
// that it reads: each group is a consistent version, but groups that change
// meanwhile may be seen before or after their change.
func (n *hnode) eachGroup(fn func(name string, v *groupView)) {
	n.each(func(c *groupCell) {
		if v := c.cur.Load(); v != nil {
			fn(c.name, v)
		}
	})
}
