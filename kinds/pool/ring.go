package pool

import (
	"sort"
	"strconv"

	"github.com/proctor-run/proctor/value"
)

// VirtualNodes is how many points each routee has on the consistent-hash
// ring: enough that keys spread evenly and a resize moves about 1/n of
// them, few enough that rebuilding the ring on a resize stays cheap.
const VirtualNodes = 64

// ring maps hashes to routees. Points are derived from a stable name per
// routee (a pool's slot number, not its PID, so a routee restarted in place
// keeps its keys and a resize moves only the keys of the slots added or
// removed; a group member's PID string).
type ring struct {
	points []uint64
	owner  []int // index into the names given to newRing, parallel to points
}

func newRing(names []string) *ring {
	slots := names
	r := &ring{points: make([]uint64, 0, len(slots)*VirtualNodes), owner: make([]int, 0, len(slots)*VirtualNodes)}
	type pt struct {
		h uint64
		o int
	}
	pts := make([]pt, 0, len(slots)*VirtualNodes)
	for i, s := range slots {
		base := s + "#"
		for v := 0; v < VirtualNodes; v++ {
			pts = append(pts, pt{value.Hash(base + strconv.Itoa(v)), i})
		}
	}
	sort.Slice(pts, func(a, b int) bool { return pts[a].h < pts[b].h })
	for _, p := range pts {
		r.points = append(r.points, p.h)
		r.owner = append(r.owner, p.o)
	}
	return r
}

// lookup returns the index of the routee that owns key, or -1 when the
// ring is empty.
func (r *ring) lookup(key string) int {
	if len(r.points) == 0 {
		return -1
	}
	h := value.Hash(key)
	i := sort.Search(len(r.points), func(i int) bool { return r.points[i] >= h })
	if i == len(r.points) {
		i = 0
	}
	return r.owner[i]
}
