package pgscope

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/proctor-run/proctor/process"
)

// groupView is the published, immutable state of one group: every member
// (with multiplicity, local members first, then each remote node's) and the
// local members alone. Readers share it; nobody writes to it once published.
type groupView struct {
	name  string
	all   []process.PID
	local []process.PID

	hash uint64
	next *groupView // another view whose key has the same 64-bit hash

	// The distinct member processes, computed by the first broadcast to
	// this version of the group and reused by the next ones.
	distinctAll, distinctLocal atomic.Pointer[[]process.PID]
}

// distinct returns the members (or local members) without repeats.
func (v *groupView) distinct(local bool) []process.PID {
	cache, pids := &v.distinctAll, v.all
	if local {
		cache, pids = &v.distinctLocal, v.local
	}
	if d := cache.Load(); d != nil {
		return *d
	}
	d := distinct(pids)
	cache.Store(&d)
	return d
}

// clone copies a view out of a collision chain (without its chain link).
func (v *groupView) clone() *groupView {
	return &groupView{name: v.name, all: v.all, local: v.local, hash: v.hash}
}

// The group index is a persistent hash array mapped trie: an update copies
// only the path from the root to the changed leaf (a few small nodes), so the
// loop can publish a new version after every command in O(log32 n) time and
// readers keep using whichever version they loaded, without locks. A plain
// map would have to be copied whole on every new or vanished group, which is
// O(groups) per join.
//
// A slot is one pointer: to a sub-trie, or (its bit set in leafmap) to a
// view, so a copied node of 32 entries is 256 bytes and a leaf needs no
// node of its own.
type hnode struct {
	bitmap  uint32
	leafmap uint32
	slots   []unsafe.Pointer
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
		p := n.slots[bits.OnesCount32(n.bitmap&(bit-1))]
		if n.leafmap&bit == 0 {
			n = (*hnode)(p)
			continue
		}
		for v := (*groupView)(p); v != nil; v = v.next {
			if v.hash == h && v.name == key {
				return v
			}
		}
		return nil
	}
	return nil
}

func (n *hnode) copyWith(idx int, p unsafe.Pointer, leaf bool, bit uint32) *hnode {
	out := &hnode{bitmap: n.bitmap, leafmap: n.leafmap, slots: make([]unsafe.Pointer, len(n.slots))}
	copy(out.slots, n.slots)
	out.slots[idx] = p
	if leaf {
		out.leafmap |= bit
	} else {
		out.leafmap &^= bit
	}
	return out
}

// with returns a trie holding v (hash h, v.next unset) in place of any view
// of the same name, and whether the name is new.
func (n *hnode) with(h uint64, v *groupView, shift uint) (*hnode, bool) {
	v.hash = h
	bit := uint32(1) << ((h >> shift) & 31)
	if n == nil {
		return &hnode{bitmap: bit, leafmap: bit, slots: []unsafe.Pointer{unsafe.Pointer(v)}}, true
	}
	idx := bits.OnesCount32(n.bitmap & (bit - 1))
	if n.bitmap&bit == 0 {
		out := &hnode{bitmap: n.bitmap | bit, leafmap: n.leafmap | bit, slots: make([]unsafe.Pointer, len(n.slots)+1)}
		copy(out.slots, n.slots[:idx])
		out.slots[idx] = unsafe.Pointer(v)
		copy(out.slots[idx+1:], n.slots[idx:])
		return out, true
	}
	p := n.slots[idx]
	if n.leafmap&bit == 0 {
		sub, added := (*hnode)(p).with(h, v, shift+hbits)
		return n.copyWith(idx, unsafe.Pointer(sub), false, bit), added
	}
	old := (*groupView)(p)
	if old.hash == h {
		chain, added := chainWith(old, v)
		return n.copyWith(idx, unsafe.Pointer(chain), true, bit), added
	}
	// Two hashes share this slot: push the old leaf one level down and
	// insert beside it.
	obit := uint32(1) << ((old.hash >> (shift + hbits)) & 31)
	sub := &hnode{bitmap: obit, leafmap: obit, slots: []unsafe.Pointer{p}}
	sub, _ = sub.with(h, v, shift+hbits)
	return n.copyWith(idx, unsafe.Pointer(sub), false, bit), true
}

// chainWith returns the collision chain head with v in place of the view of
// the same name (or added). Views are immutable, so the others are copied.
func chainWith(head, v *groupView) (*groupView, bool) {
	added := true
	v.next = nil
	tail := v
	for e := head; e != nil; e = e.next {
		if e.name == v.name {
			added = false
			continue
		}
		c := e.clone()
		tail.next = c
		tail = c
	}
	return v, added
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
	p := n.slots[idx]
	if n.leafmap&bit == 0 {
		sub, removed := (*hnode)(p).without(h, key, shift+hbits)
		if !removed {
			return n, false
		}
		if sub == nil {
			return n.dropSlot(bit, idx), true
		}
		// A sub-trie left with a single leaf collapses into this level.
		if len(sub.slots) == 1 && sub.leafmap != 0 {
			return n.copyWith(idx, sub.slots[0], true, bit), true
		}
		return n.copyWith(idx, unsafe.Pointer(sub), false, bit), true
	}
	head := (*groupView)(p)
	if head.hash != h {
		return n, false
	}
	var rest, tail *groupView
	found := false
	for e := head; e != nil; e = e.next {
		if e.name == key {
			found = true
			continue
		}
		c := e.clone()
		if tail == nil {
			rest = c
		} else {
			tail.next = c
		}
		tail = c
	}
	if !found {
		return n, false
	}
	if rest == nil {
		return n.dropSlot(bit, idx), true
	}
	return n.copyWith(idx, unsafe.Pointer(rest), true, bit), true
}

func (n *hnode) dropSlot(bit uint32, idx int) *hnode {
	if len(n.slots) == 1 {
		return nil
	}
	out := &hnode{bitmap: n.bitmap &^ bit, leafmap: n.leafmap &^ bit, slots: make([]unsafe.Pointer, len(n.slots)-1)}
	copy(out.slots, n.slots[:idx])
	copy(out.slots[idx:], n.slots[idx+1:])
	return out
}

// each calls fn for every view, in no particular order.
func (n *hnode) each(fn func(v *groupView)) {
	if n == nil {
		return
	}
	b := n.bitmap
	for _, p := range n.slots {
		bit := b & -b
		b &^= bit
		if n.leafmap&bit == 0 {
			(*hnode)(p).each(fn)
			continue
		}
		for v := (*groupView)(p); v != nil; v = v.next {
			fn(v)
		}
	}
}
