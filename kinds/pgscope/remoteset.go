package pgscope

import (
	"slices"
	"strings"

	"github.com/proctor-run/proctor/process"
)

// remoteSet is a group's members on other nodes: each node's list, nodes
// by name, the order a published version lists them in. It is never
// changed once made (with makes a new one), so each version of the group
// shares it as it is, and a group with members on one other node, the
// usual group of a large cluster, costs one small allocation per change.
// A map per group (as it was) cost about 400 bytes for its first node:
// after 100 nodes start together, every node builds 9,900 of them.
type remoteSet []nodeMembers

// find returns where node is, or would be inserted, and whether it is
// there.
func (r remoteSet) find(node string) (int, bool) {
	if len(r) <= 8 {
		// Most groups have members on a node or two: a scan.
		for i := range r {
			switch c := strings.Compare(r[i].node, node); {
			case c == 0:
				return i, true
			case c > 0:
				return i, false
			}
		}
		return len(r), false
	}
	lo, hi := 0, len(r)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r[m].node < node {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(r) && r[lo].node == node
}

// get returns node's members (shared: read only).
func (r remoteSet) get(node string) []process.PID {
	if i, ok := r.find(node); ok {
		return r[i].pids
	}
	return nil
}

// with returns the set with node's members pids (none: node removed),
// leaving r as it was.
func (r remoteSet) with(node string, pids []process.PID) remoteSet {
	i, ok := r.find(node)
	switch {
	case ok && len(pids) == 0:
		if len(r) == 1 {
			return nil
		}
		out := make(remoteSet, 0, len(r)-1)
		out = append(out, r[:i]...)
		return append(out, r[i+1:]...)
	case ok:
		out := make(remoteSet, len(r))
		copy(out, r)
		out[i].pids = pids
		return out
	case len(pids) == 0:
		return r
	}
	out := make(remoteSet, 0, len(r)+1)
	out = append(out, r[:i]...)
	out = append(out, nodeMembers{node, pids})
	return append(out, r[i:]...)
}

// joined returns the set with pids added to node's members, leaving r as
// it was.
func (r remoteSet) joined(node string, pids []process.PID) remoteSet {
	if len(r) == 0 {
		return withCopy(node, pids)
	}
	return r.with(node, append(r.get(node), pids...))
}

// synced returns the set with node's members a copy of pids (a full
// sync's list, which the caller keeps), leaving r as it was.
func (r remoteSet) synced(node string, pids []process.PID) remoteSet {
	if len(r) == 0 {
		return withCopy(node, pids)
	}
	return r.with(node, slices.Clone(pids))
}

// withCopy returns a set of node alone with a copy of pids. The first
// member of the first node, as a group of another node's process starts,
// is one allocation: the set and the list together.
func withCopy(node string, pids []process.PID) remoteSet {
	switch len(pids) {
	case 0:
		return nil
	case 1:
		one := &struct {
			set [1]nodeMembers
			pid [1]process.PID
		}{pid: [1]process.PID{pids[0]}}
		one.set[0] = nodeMembers{node, one.pid[:]}
		return one.set[:]
	}
	return remoteSet{{node, slices.Clone(pids)}}
}
