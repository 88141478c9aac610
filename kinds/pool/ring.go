package pool

import (
	"hash/fnv"
	"math"
	"sort"
	"strconv"
)

// VirtualNodes is how many points each routee has on the consistent-hash
// ring: enough that keys spread evenly and a resize moves about 1/n of
// them, few enough that rebuilding the ring on a resize stays cheap.
const VirtualNodes = 64

// HashKey returns the key consistent hashing uses for payload: the key
// field of a table, else the payload itself when it is a string or a
// number. Numbers are rendered in their shortest form, so 42 and "42" are
// the same key. ok is false when the payload has no key.
func HashKey(payload any) (key string, ok bool) {
	switch x := payload.(type) {
	case map[string]any:
		if k, found := x["key"]; found {
			return scalarKey(k)
		}
		return "", false
	case map[any]any:
		if k, found := x["key"]; found {
			return scalarKey(k)
		}
		return "", false
	}
	return scalarKey(payload)
}

func scalarKey(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		if math.IsNaN(x) {
			return "", false
		}
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case float32:
		return scalarKey(float64(x))
	case int:
		return strconv.Itoa(x), true
	case int8:
		return strconv.FormatInt(int64(x), 10), true
	case int16:
		return strconv.FormatInt(int64(x), 10), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint:
		return strconv.FormatUint(uint64(x), 10), true
	case uint8:
		return strconv.FormatUint(uint64(x), 10), true
	case uint16:
		return strconv.FormatUint(uint64(x), 10), true
	case uint32:
		return strconv.FormatUint(uint64(x), 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	}
	return "", false
}

// hash64 is FNV-1a with a final mix: stable across processes and nodes
// (router.group and supervisor.partition must agree on where a key goes),
// and the mix spreads the short, similar strings of virtual nodes.
func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

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
			pts = append(pts, pt{hash64(base + strconv.Itoa(v)), i})
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
	h := hash64(key)
	i := sort.Search(len(r.points), func(i int) bool { return r.points[i] >= h })
	if i == len(r.points) {
		i = 0
	}
	return r.owner[i]
}
