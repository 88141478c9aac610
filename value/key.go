package value

import (
	"math"
	"strconv"
)

// Key returns the routing key of a payload, the one rule consistent
// hashing (router.pool, router.group) and partitioning
// (supervisor.partition) share: the key field of a table, else the payload
// itself when it is a string or a number. Numbers render in their shortest
// form, so 42, 42.0, int32(42) and "42" are one key — a Go embedder's
// integer and a Lua number reach the same place. ok is false when the
// payload has no key (or it is NaN).
func Key(payload any) (key string, ok bool) {
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
	case Record:
		if k, found := RecordField(x, "key"); found {
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

// Hash hashes a routing key: FNV-1a finished with the splitmix64 mixer, so
// every bit depends on every byte (a partition takes it modulo its size,
// a ring compares it whole). It is stable across processes and nodes, so
// every node routes a key alike.
func Hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
