package pgscope

import (
	"math/bits"

	"github.com/proctor-run/proctor/process"
)

// memberSet is one version of a group's local members in join order, a
// process repeated once per join. It is persistent: each membership has a
// sequence number, given by its group in join order, and the set is a
// 32-way radix trie on that number, so a join or a leave copies only the
// path to its slot (a few nodes of at most 32 entries) and yields a new
// version while readers keep the one they loaded. Walking the trie in slot
// order lists the members in join order. A copied member list would cost
// every join and leave time in proportion to the group.
//
// The zero value is the empty set. A memberSet is a value: with and
// without return the new version and leave the receiver as it was.
type memberSet struct {
	root *mnode
	// shift is the level of root: the root's slot of sequence number s is
	// (s >> shift) & 31; leaves are at shift 0.
	shift uint
	// A set of one member, as most groups are, holds it here and has no
	// trie, so that a version of it costs no allocation of its own.
	single bool
	seq    uint64
	pid    process.PID
}

// mnode is a trie node: a leaf (shift 0) holds members, an inner node
// sub-tries, one per bit set in bitmap, in slot order. Immutable once
// reachable from a published set.
type mnode struct {
	bitmap uint32
	count  int // members under this node
	kids   []*mnode
	pids   []process.PID
}

const (
	mbits  = 5
	mwidth = 1 << mbits
)

func (m memberSet) len() int {
	if m.single {
		return 1
	}
	if m.root == nil {
		return 0
	}
	return m.root.count
}

// with returns the set with pid added under sequence number seq, which
// must be new to the set.
func (m memberSet) with(seq uint64, pid process.PID) memberSet {
	switch {
	case m.single:
		// A second member: both go to a trie.
		one := memberSet{}.trieWith(m.seq, m.pid)
		return one.trieWith(seq, pid)
	case m.root == nil:
		return memberSet{single: true, seq: seq, pid: pid}
	}
	return m.trieWith(seq, pid)
}

func (m memberSet) trieWith(seq uint64, pid process.PID) memberSet {
	for seq>>m.shift >= mwidth {
		// The root is too small for seq: it becomes slot 0 of a new
		// root, as every number it holds is below seq's range.
		if m.root != nil {
			m.root = &mnode{bitmap: 1, count: m.root.count, kids: []*mnode{m.root}}
		}
		m.shift += mbits
	}
	m.root = m.root.with(seq, pid, m.shift)
	return m
}

// without returns the set without sequence number seq, and whether it was
// there.
func (m memberSet) without(seq uint64) (memberSet, bool) {
	if m.single {
		if seq != m.seq {
			return m, false
		}
		return memberSet{}, true
	}
	if m.root == nil || seq>>m.shift >= mwidth {
		return m, false
	}
	root, ok := m.root.without(seq, m.shift)
	if !ok {
		return m, false
	}
	m.root = root
	if root == nil {
		m.shift = 0
	}
	return m, true
}

func (n *mnode) with(seq uint64, pid process.PID, shift uint) *mnode {
	bit := uint32(1) << ((seq >> shift) & (mwidth - 1))
	out := &mnode{bitmap: bit, count: 1}
	var have uint32
	if n != nil {
		have = n.bitmap
		out.bitmap |= have
		out.count += n.count
	}
	pos := bits.OnesCount32(have & (bit - 1))
	if shift == 0 {
		if have&bit != 0 {
			panic("pgscope: member sequence number used twice")
		}
		var old []process.PID
		if n != nil {
			old = n.pids
		}
		out.pids = make([]process.PID, len(old)+1)
		copy(out.pids, old[:pos])
		out.pids[pos] = pid
		copy(out.pids[pos+1:], old[pos:])
		return out
	}
	if have&bit != 0 {
		out.kids = make([]*mnode, len(n.kids))
		copy(out.kids, n.kids)
		out.kids[pos] = n.kids[pos].with(seq, pid, shift-mbits)
		return out
	}
	var old []*mnode
	if n != nil {
		old = n.kids
	}
	out.kids = make([]*mnode, len(old)+1)
	copy(out.kids, old[:pos])
	out.kids[pos] = (*mnode)(nil).with(seq, pid, shift-mbits)
	copy(out.kids[pos+1:], old[pos:])
	return out
}

// without returns the node without seq (nil when that empties it) and
// whether seq was there.
func (n *mnode) without(seq uint64, shift uint) (*mnode, bool) {
	bit := uint32(1) << ((seq >> shift) & (mwidth - 1))
	if n.bitmap&bit == 0 {
		return n, false
	}
	if n.count == 1 {
		// Its one member is seq's (the slot holds something, and the
		// only path below it leads to one member).
		if shift == 0 {
			return nil, true
		}
		if _, ok := n.kids[0].without(seq, shift-mbits); !ok {
			return n, false
		}
		return nil, true
	}
	pos := bits.OnesCount32(n.bitmap & (bit - 1))
	out := &mnode{bitmap: n.bitmap, count: n.count - 1}
	if shift == 0 {
		out.bitmap &^= bit
		out.pids = make([]process.PID, len(n.pids)-1)
		copy(out.pids, n.pids[:pos])
		copy(out.pids[pos:], n.pids[pos+1:])
		return out, true
	}
	kid, ok := n.kids[pos].without(seq, shift-mbits)
	if !ok {
		return n, false
	}
	if kid == nil {
		out.bitmap &^= bit
		out.kids = make([]*mnode, len(n.kids)-1)
		copy(out.kids, n.kids[:pos])
		copy(out.kids[pos:], n.kids[pos+1:])
		return out, true
	}
	out.kids = make([]*mnode, len(n.kids))
	copy(out.kids, n.kids)
	out.kids[pos] = kid
	return out, true
}

// first returns the earliest member of a set that is not empty.
func (m memberSet) first() process.PID {
	if m.single {
		return m.pid
	}
	n := m.root
	for n.pids == nil {
		n = n.kids[0]
	}
	return n.pids[0]
}

// appendTo appends the members in join order.
func (m memberSet) appendTo(dst []process.PID) []process.PID {
	if m.single {
		return append(dst, m.pid)
	}
	return m.root.appendTo(dst)
}

func (n *mnode) appendTo(dst []process.PID) []process.PID {
	if n == nil {
		return dst
	}
	if n.pids != nil {
		return append(dst, n.pids...)
	}
	for _, k := range n.kids {
		dst = k.appendTo(dst)
	}
	return dst
}

// each calls fn for the members in join order until it returns false; it
// reports whether fn always returned true.
func (m memberSet) each(fn func(process.PID) bool) bool {
	if m.single {
		return fn(m.pid)
	}
	return m.root.each(fn)
}

func (n *mnode) each(fn func(process.PID) bool) bool {
	if n == nil {
		return true
	}
	for _, p := range n.pids {
		if !fn(p) {
			return false
		}
	}
	for _, k := range n.kids {
		if !k.each(fn) {
			return false
		}
	}
	return true
}
