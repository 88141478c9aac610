package supervisor

import (
	"fmt"
	"math"

	"github.com/proctor-run/proctor/process"
)

// KeyOf returns the partition key of a payload: the key field of a table,
// else the payload itself when it is a string or a number.
func KeyOf(payload any) (any, bool) {
	switch x := payload.(type) {
	case map[string]any:
		k, ok := x["key"]
		return k, ok && isScalarKey(k)
	case map[any]any:
		k, ok := x["key"]
		return k, ok && isScalarKey(k)
	}
	return payload, isScalarKey(payload)
}

func isScalarKey(k any) bool {
	switch k.(type) {
	case string, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}

// HashKey hashes a partition key. Numbers hash by value, so 3 and 3.0 (an
// integer from Go and a number from Lua) reach the same worker.
func HashKey(key any) (uint64, bool) {
	switch x := key.(type) {
	case string:
		return hashString(x), true
	case float64:
		return hashFloat(x), true
	case int:
		return hashInt(int64(x)), true
	case int64:
		return hashInt(x), true
	case int32:
		return hashInt(int64(x)), true
	case int16:
		return hashInt(int64(x)), true
	case int8:
		return hashInt(int64(x)), true
	case uint:
		return hashFloat(float64(x)), true
	case uint64:
		return hashFloat(float64(x)), true
	case uint32:
		return hashInt(int64(x)), true
	case uint16:
		return hashInt(int64(x)), true
	case uint8:
		return hashInt(int64(x)), true
	case float32:
		return hashFloat(float64(x)), true
	case map[string]any, map[any]any:
		k, ok := KeyOf(x)
		if !ok {
			return 0, false
		}
		return HashKey(k)
	}
	return 0, false
}

// hashString is FNV-1a, finished with a mixer so the low bits (used by the
// modulo) depend on every byte.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix(h)
}

func hashFloat(f float64) uint64 {
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return hashInt(int64(f))
	}
	return mix(math.Float64bits(f) ^ 0x9e3779b97f4a7c15)
}

func hashInt(i int64) uint64 { return mix(uint64(i)) }

// mix is the splitmix64 finalizer.
func mix(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}

// Partitions returns a partition supervisor's worker count (0 for others).
func (s *Supervisor) Partitions() int {
	if s.kind != KindPartition {
		return 0
	}
	return len(s.snap.Load().slots)
}

// Route returns the worker that owns key (a string, a number, or a table
// whose key field is one). The slot of a key is fixed while the supervisor
// runs: a restarted worker takes its predecessor's slot. While that worker
// is being restarted, or once it stopped for good (its slot stays, empty),
// Route fails with ErrNoWorker.
func (s *Supervisor) Route(key any) (process.PID, error) {
	if s.kind != KindPartition {
		return process.PID{}, fmt.Errorf("supervisor %s: route: %w", s.id, ErrNotPartition)
	}
	h, ok := HashKey(key)
	if !ok {
		return process.PID{}, fmt.Errorf("supervisor %s: route %T: %w", s.id, key, ErrBadKey)
	}
	slots := s.snap.Load().slots
	if len(slots) == 0 {
		return process.PID{}, fmt.Errorf("supervisor %s: route: %w", s.id, ErrStopped)
	}
	c := slots[h%uint64(len(slots))].info.Load()
	if c.PID.IsZero() {
		return process.PID{}, fmt.Errorf("supervisor %s: route to worker %s (%s): %w", s.id, c.ID, c.Status, ErrNoWorker)
	}
	return c.PID, nil
}

// SendKey delivers m to the worker that owns key.
func (s *Supervisor) SendKey(key any, m process.Message) error {
	pid, err := s.Route(key)
	if err != nil {
		return err
	}
	if err := s.node.Send(pid, m); err != nil {
		return fmt.Errorf("supervisor %s: %w", s.id, err)
	}
	return nil
}

// Send delivers a message to the worker that owns its payload's key (see
// KeyOf).
func (s *Supervisor) Send(from process.PID, topic string, payload any) error {
	key, ok := KeyOf(payload)
	if !ok {
		return fmt.Errorf("supervisor %s: send %T: %w", s.id, payload, ErrBadKey)
	}
	return s.SendKey(key, process.Message{From: from, Topic: topic, Payload: payload})
}
