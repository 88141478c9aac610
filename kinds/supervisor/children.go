package supervisor

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// A supervisor's children: the loop-owned list and what readers see of it,
// and spawning and stopping one child.

// snapshot is what readers see. The list of slots is replaced only when
// children are added, removed or reordered (an append reuses spare
// capacity, which no reader can see); a child's own changes are one store
// into its slot. A supervisor with many children thus publishes a restart
// or a start_child in O(1).
type snapshot struct {
	spec   *Spec
	status Status
	slots  []*childSlot
}

type childSlot struct{ info atomic.Pointer[ChildInfo] }

// child is loop-owned state of one child.
type child struct {
	spec     ChildSpec
	typ      ChildType
	pid      process.PID
	status   Status
	restarts int
	lastExit string // how its last process ended; "" before the first exit
	startErr error  // why its last restart failed to start, until one succeeds
	digest   string // the child entry's digest when it was spawned
	declared bool   // from the entry's children (not started at run time)
	slot     *childSlot
	// entryStop is the child entry's lifecycle.stop_timeout (0: none),
	// its shutdown when the spec names none.
	entryStop time.Duration
}

func newChild(spec ChildSpec, typ ChildType, declared bool) *child {
	return &child{spec: spec, typ: typ, status: StatusStarting, declared: declared, slot: &childSlot{}}
}

// startChild runs on the loop.
func (s *Supervisor) startChild(spec ChildSpec) (process.PID, error) {
	if c, ok := s.byID[spec.ID]; ok {
		if s.kind == KindDynamic || c.status != StatusTerminated {
			return process.PID{}, fmt.Errorf("supervisor %s: start child %q: %w (status %s)", s.id, spec.ID, ErrDuplicateChild, c.status)
		}
		if err := s.spawnChild(c); err != nil {
			// Still terminated: start_child failing is no restart.
			s.set(c, StatusTerminated)
			return process.PID{}, err
		}
		return c.pid, nil
	}
	if s.kind != KindDynamic {
		return process.PID{}, fmt.Errorf("supervisor %s: start child %q: %w; use a supervisor.dynamic", s.id, spec.ID, ErrFixedChildren)
	}
	if m := s.spec.MaxChildren; m > 0 && len(s.children) >= m {
		return process.PID{}, fmt.Errorf("supervisor %s: start child %q: %w (%d)", s.id, spec.ID, ErrMaxChildren, m)
	}
	c := newChild(spec, s.typeOf(spec.Process), false)
	if err := s.spawnChild(c); err != nil {
		return process.PID{}, err
	}
	// The id now names a run-time child; a reload treats it as such.
	delete(s.spent, spec.ID)
	s.appendChild(c)
	return c.pid, nil
}

// appendChild adds c after the others and publishes it.
func (s *Supervisor) appendChild(c *child) {
	s.children = append(s.children, c)
	s.byID[c.spec.ID] = c
	if !c.pid.IsZero() {
		s.byPID[c.pid] = c
	}
	s.show(c)
	s.slots = append(s.slots, c.slot)
	s.storeSnapshot()
}

// remove drops c (whose process is gone) and publishes the new list.
func (s *Supervisor) remove(c *child) {
	i := slices.Index(s.children, c)
	if i < 0 {
		return
	}
	s.children = slices.Delete(s.children, i, i+1)
	if s.byID[c.spec.ID] == c {
		delete(s.byID, c.spec.ID)
	}
	if c.declared {
		s.spent[c.spec.ID] = c.spec
	}
	// A child that is gone for good takes its restart series with it, so
	// a dynamic supervisor's churn of child IDs does not grow /metrics
	// without bound. (A child added again later counts from zero: a
	// counter reset, which Prometheus handles.)
	s.met.restarts.DeleteLabelValues(string(s.id), c.spec.ID)
	s.setPID(c, process.PID{})
	s.relist()
}

// setChildren replaces the list (a reload) and publishes it.
func (s *Supervisor) setChildren(cs []*child) {
	s.children = cs
	clear(s.byID)
	clear(s.byPID)
	for _, c := range cs {
		s.byID[c.spec.ID] = c
		if !c.pid.IsZero() {
			s.byPID[c.pid] = c
		}
		s.show(c)
	}
	s.relist()
}

// relist publishes a fresh slot list: readers may hold the old one, so it
// is never modified in place.
func (s *Supervisor) relist() {
	slots := make([]*childSlot, len(s.children))
	for i, c := range s.children {
		slots[i] = c.slot
	}
	s.slots = slots
	s.storeSnapshot()
}

func (s *Supervisor) setPID(c *child, pid process.PID) {
	if !c.pid.IsZero() && s.byPID[c.pid] == c {
		delete(s.byPID, c.pid)
	}
	c.pid = pid
	if !pid.IsZero() {
		s.byPID[pid] = c
	}
}

// set changes c's status and publishes it.
func (s *Supervisor) set(c *child, st Status) {
	c.status = st
	s.show(c)
}

// show publishes c's current state in its slot.
func (s *Supervisor) show(c *child) {
	c.slot.info.Store(&ChildInfo{
		ID: c.spec.ID, Process: c.spec.Process, PID: c.pid, Restart: c.spec.Restart,
		Type: c.typ, Status: c.status, Restarts: c.restarts, Shutdown: c.spec.shutdownFor(c.typ, c.entryStop),
		LastExit: c.lastExit,
	})
}

func (s *Supervisor) typeOf(id registry.ID) ChildType {
	if s.env.Entries != nil {
		if e, ok := s.env.Entries.Entry(id); ok && isSupervisorKind(e.Kind) {
			return SupervisorType
		}
	}
	return Worker
}

func isSupervisorKind(k string) bool {
	return k == KindStatic || k == KindDynamic || k == KindPartition
}

// publishStatus publishes the supervisor's own status.
func (s *Supervisor) publishStatus(st Status) {
	s.state = st
	s.storeSnapshot()
}

func (s *Supervisor) storeSnapshot() {
	s.snap.Store(&snapshot{spec: s.spec, status: s.state, slots: s.slots})
}

func (sn *snapshot) infos() []ChildInfo {
	out := make([]ChildInfo, len(sn.slots))
	for i, sl := range sn.slots {
		out[i] = *sl.info.Load()
	}
	return out
}

// spawnChild instantiates c's entry, linked to and monitored by the
// supervisor before it runs, so no exit can be missed. The child is
// managed (the supervisor renews it on a reload) unless its spec says
// on_reload: keep.
func (s *Supervisor) spawnChild(c *child) error {
	if s.env.Entries == nil {
		return fmt.Errorf("supervisor %s: child %q: %w: no entries", s.id, c.spec.ID, ErrNotSupervisor)
	}
	e, ok := s.env.Entries.Entry(c.spec.Process)
	if !ok {
		return fmt.Errorf("supervisor %s: child %q: entry %s: %w", s.id, c.spec.ID, c.spec.Process, ErrNoChild)
	}
	if isSupervisorKind(e.Kind) {
		c.typ = SupervisorType
	} else {
		c.typ = Worker
	}
	c.entryStop = e.Lifecycle.StopTimeout
	pid, err := s.env.Entries.Spawn(c.spec.Process, registry.SpawnOptions{
		SpawnOptions: process.SpawnOptions{LinkTo: s.pid, MonitorBy: s.pid, Name: c.spec.Name},
		Args:         c.spec.Args,
		Managed:      c.spec.OnReload != ReloadKeep,
		Upgradable:   c.spec.OnReload == ReloadUpgrade,
	})
	if err != nil {
		return fmt.Errorf("supervisor %s: child %q: spawn %s: %w", s.id, c.spec.ID, c.spec.Process, err)
	}
	s.setPID(c, pid)
	c.digest = e.Digest
	s.set(c, StatusRunning)
	return nil
}

// stopChild stops c's process within its shutdown deadline (killing it
// past the deadline, or at once for brutal_kill) and waits for it.
func (s *Supervisor) stopChild(c *child) {
	if c.pid.IsZero() {
		return
	}
	pid := c.pid
	s.set(c, StatusStopping)
	switch d := c.spec.shutdownFor(c.typ, c.entryStop); d {
	case BrutalKill:
		if done, _, ok := s.node.Done(pid); ok {
			_ = s.node.Kill(pid)
			<-done
		}
	case Infinity:
		_, _ = s.node.Stop(context.Background(), pid)
	default:
		ctx, cancel := context.WithTimeout(context.Background(), d)
		_, _ = s.node.Stop(ctx, pid)
		cancel()
	}
	s.setPID(c, process.PID{})
}

// stopAll stops every child in reverse start order.
func (s *Supervisor) stopAll() {
	for i := len(s.children) - 1; i >= 0; i-- {
		c := s.children[i]
		s.stopChild(c)
		s.set(c, StatusTerminated)
	}
}

func (s *Supervisor) startInitial() error {
	s.publishStatus(StatusStarting)
	for i, c := range s.children {
		if err := s.spawnChild(c); err != nil {
			for j := i - 1; j >= 0; j-- {
				s.stopChild(s.children[j])
				s.set(s.children[j], StatusTerminated)
			}
			s.set(c, StatusTerminated)
			return err
		}
	}
	return nil
}
