package supervisor

import (
	"fmt"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

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
	k, ok := value.Key(key)
	if !ok {
		return process.PID{}, fmt.Errorf("supervisor %s: route %T: %w", s.id, key, ErrBadKey)
	}
	slots := s.snap.Load().slots
	if len(slots) == 0 {
		return process.PID{}, fmt.Errorf("supervisor %s: route: %w", s.id, ErrStopped)
	}
	c := slots[value.Hash(k)%uint64(len(slots))].info.Load()
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

// Send delivers a message to the worker that owns its payload's key
// (value.Key).
func (s *Supervisor) Send(from process.PID, topic string, payload any) error {
	if _, ok := value.Key(payload); !ok {
		return fmt.Errorf("supervisor %s: send %T: %w", s.id, payload, ErrBadKey)
	}
	return s.SendKey(payload, process.Message{From: from, Topic: topic, Payload: payload})
}
