package pgscope

import (
	"iter"
	"sync/atomic"
	"unsafe"

	"github.com/proctor-run/proctor/process"
)

// groupView is one version of a group's membership. Readers share it;
// nobody writes to it once published, so a version costs the loop O(log n)
// to make, however big the group.
//
// A small group (at most flatMax members), as nearly every group is, is
// its flat list alone, built at publish: one allocation of 96 bytes for
// the usual group of one member, and a read is a load and a slice. A
// bigger group's version keeps its persistent set and the other nodes'
// lists (bigMembers) and builds its flat lists lazily.
//
// The order of every member is the local ones in join order, then each
// other node's, nodes by name.
type groupView struct {
	// list holds every member, this node's first, when big is nil; its
	// capacity is its length, so a reader's append copies it.
	list   []process.PID
	n      int // members, with multiplicity
	nlocal int
	big    *bigMembers

	// The distinct member processes, computed by the first broadcast to
	// this version of the group and reused by the next ones.
	distinctAll, distinctLocal atomic.Pointer[[]process.PID]

	// one backs list for a group of a single member.
	one process.PID
}

// bigMembers are a big group's members as the loop published them: the
// local set (persistent, shared with the versions before and after it)
// and each other node's list (the loop never writes below a published
// length), with the flat lists built by the first reader that needs one
// and shared by the next readers of this version.
type bigMembers struct {
	set                memberSet
	remote             []nodeMembers
	flatAll, flatLocal atomic.Pointer[[]process.PID]
}

// nodeMembers are one other node's members of a group.
type nodeMembers struct {
	node string
	pids []process.PID
}

// flatMax is the most members a version lists flat at publish.
const flatMax = 32

// newGroupView makes a version of a group from its members.
func newGroupView(set memberSet, remote []nodeMembers, n int) *groupView {
	v := &groupView{}
	v.init(set, remote, n)
	return v
}

// newCell makes a group's cell with its first version. A first version
// of one member, as a group's first is nearly always, is allocated with
// the cell, a third of the allocations of a group new to the scope (a
// peer's start brings thousands): it holds nothing beyond itself, so the
// 96 bytes it keeps for the cell's life, once later versions replace it,
// are all it costs.
func newCell(name string, set memberSet, remote []nodeMembers, n int) *groupCell {
	if n != 1 {
		c := &groupCell{name: name}
		c.cur.Store(newGroupView(set, remote, n))
		return c
	}
	both := &struct {
		cell groupCell
		view groupView
	}{cell: groupCell{name: name}}
	both.view.init(set, remote, n)
	both.cell.cur.Store(&both.view)
	return &both.cell
}

// init fills a new version, not yet published.
func (v *groupView) init(set memberSet, remote []nodeMembers, n int) {
	v.n, v.nlocal = n, set.len()
	switch {
	case n > flatMax:
		v.big = &bigMembers{set: set, remote: remote}
	case n == 1:
		// The usual group: its one member backs the list, so that a
		// version of it is one allocation.
		if v.nlocal == 1 {
			v.one = set.first()
		} else {
			v.one = remote[0].pids[0]
		}
		v.list = unsafe.Slice(&v.one, 1)
	default:
		v.list = appendAll(make([]process.PID, 0, n), set, remote)
		v.list = v.list[:n:n]
	}
}

// appendAll appends every member, in order, from a set and the lists.
func appendAll(dst []process.PID, set memberSet, remote []nodeMembers) []process.PID {
	dst = set.appendTo(dst)
	for _, r := range remote {
		dst = append(dst, r.pids...)
	}
	return dst
}

// members returns every member: shared, read only, its capacity its
// length.
func (v *groupView) members() []process.PID {
	b := v.big
	if b == nil {
		return v.list
	}
	if p := b.flatAll.Load(); p != nil {
		return *p
	}
	all := appendAll(make([]process.PID, 0, v.n), b.set, b.remote)
	all = all[:len(all):len(all)]
	b.flatAll.Store(&all)
	return all
}

// localMembers returns this node's members: shared, read only, its
// capacity its length.
func (v *groupView) localMembers() []process.PID {
	b := v.big
	if b == nil {
		return v.list[:v.nlocal:v.nlocal]
	}
	if p := b.flatLocal.Load(); p != nil {
		return *p
	}
	if p := b.flatAll.Load(); p != nil {
		return (*p)[:v.nlocal:v.nlocal]
	}
	local := b.set.appendTo(make([]process.PID, 0, v.nlocal))
	local = local[:len(local):len(local)]
	b.flatLocal.Store(&local)
	return local
}

// copyAll returns every member in a list of the caller's (a subscription's
// snapshot, which its owner may keep and change).
func (v *groupView) copyAll() []process.PID { return clonePIDs(v.members()) }

// copyLocal is copyAll for this node's members.
func (v *groupView) copyLocal() []process.PID {
	if v.nlocal == 0 {
		return nil
	}
	return clonePIDs(v.localMembers())
}

// distinct returns the members (or local members) without repeats.
func (v *groupView) distinct(local bool) []process.PID {
	if v.big == nil {
		// A small list of one member, or none, is its own distinct
		// list: nothing to cache.
		if local && v.nlocal <= 1 {
			return v.list[:v.nlocal:v.nlocal]
		}
		if !local && v.n <= 1 {
			return v.list
		}
	}
	cache := &v.distinctAll
	if local {
		cache = &v.distinctLocal
	}
	if d := cache.Load(); d != nil {
		return *d
	}
	var d []process.PID
	if local {
		d = distinct(v.localMembers())
	} else {
		d = distinct(v.members())
	}
	cache.Store(&d)
	return d
}

// each calls fn for every member (or local member) in order until it
// returns false, reading the version in place.
func (v *groupView) each(local bool, fn func(process.PID) bool) {
	b := v.big
	if b == nil {
		list := v.list
		if local {
			list = list[:v.nlocal]
		}
		for _, p := range list {
			if !fn(p) {
				return
			}
		}
		return
	}
	if !b.set.each(fn) || local {
		return
	}
	for _, r := range b.remote {
		for _, p := range r.pids {
			if !fn(p) {
				return
			}
		}
	}
}

// clonePIDs returns a copy of a published list for a reader to own. The
// readers' hot path: most groups have a member or two, and a fixed-size
// array is allocated without append's size-class arithmetic and clearing
// (a third of GetMembers).
func clonePIDs(s []process.PID) []process.PID {
	switch len(s) {
	case 0:
		return nil
	case 1:
		p := new([1]process.PID)
		p[0] = s[0]
		return p[:]
	case 2:
		p := new([2]process.PID)
		p[0], p[1] = s[0], s[1]
		return p[:]
	}
	out := make([]process.PID, len(s))
	copy(out, s)
	return out
}

// Members is one version of a group's membership, read in place: taking
// it copies nothing, however big the group, and it never changes (later
// joins and leaves make new versions). The zero value is an empty group.
type Members struct{ v *groupView }

// Members returns the current version of group, to read in place: no
// lock, no wait on the loop and no copy. GetMembers is the same version
// as a slice; a big group's slice is built once per version, by its first
// reader, which Members never needs.
func (s *Scope) Members(group string) Members {
	return Members{s.root.Load().get(hashGroup(group), group).view()}
}

// Len returns how many members the version has, a process counted once
// per join.
func (m Members) Len() int {
	if m.v == nil {
		return 0
	}
	return m.v.n
}

// LocalLen returns how many of them are this node's.
func (m Members) LocalLen() int {
	if m.v == nil {
		return 0
	}
	return m.v.nlocal
}

// All yields every member in GetMembers's order (this node's in join
// order, then each other node's), a process once per join.
func (m Members) All() iter.Seq[process.PID] {
	return func(yield func(process.PID) bool) {
		if m.v != nil {
			m.v.each(false, yield)
		}
	}
}

// Local yields this node's members in join order, as GetLocalMembers.
func (m Members) Local() iter.Seq[process.PID] {
	return func(yield func(process.PID) bool) {
		if m.v != nil {
			m.v.each(true, yield)
		}
	}
}
