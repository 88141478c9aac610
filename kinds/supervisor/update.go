package supervisor

import (
	"context"
	"fmt"
	"slices"

	"github.com/proctor-run/proctor/registry"
)

// Update applies a changed entry in place when it can: max_restarts,
// restart_window, strategy and max_children take effect at once; the
// declared children are diffed by id — added ones start, removed ones stop
// (reverse order), changed ones (any field but on_reload, which applies
// in place) are stopped and started again, unchanged ones are not
// touched. Then every child whose entry's definition changed, declared or
// not, is restarted on the new one (restartOutdated). A partition
// supervisor whose partitions or worker fields changed, or a change of
// kind, needs a restart (false).
func (s *Supervisor) Update(ctx context.Context, e *registry.Entry) (bool, error) {
	spec, ok := e.Spec.(*Spec)
	if !ok || spec == nil {
		return false, nil
	}
	if err := spec.check(); err != nil { // a Spec built in Go; a decoded one was validated
		return false, fmt.Errorf("supervisor %s: %w", s.id, err)
	}
	ns := spec.withDefaults()
	if ns.Kind != s.kind {
		return false, nil
	}
	var applied bool
	err := s.call(ctx, func() error {
		applied = s.applyUpdate(ns)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("supervisor %s: update: %w", s.id, err)
	}
	return applied, nil
}

// applyUpdate runs on the loop.
func (s *Supervisor) applyUpdate(ns *Spec) bool {
	if s.kind == KindPartition {
		if ns.Partitions != s.spec.Partitions || !ns.Worker.withDefaults().equal(s.spec.Worker.withDefaults()) {
			return false
		}
		s.spec = ns
		for _, c := range s.children {
			s.setOnReload(c, ns.Worker.withDefaults().OnReload)
		}
		s.storeSnapshot()
		s.restartOutdated()
		return true
	}
	old := map[string]*child{}
	for _, c := range s.children {
		if c.declared {
			old[c.spec.ID] = c
		}
	}
	stop := map[*child]bool{}
	var next []*child
	declared := map[string]bool{}
	for _, cs := range ns.Children {
		declared[cs.ID] = true
		if c, ok := old[cs.ID]; ok {
			delete(old, cs.ID)
			if c.spec.equal(cs) {
				s.setOnReload(c, cs.OnReload)
				next = append(next, c)
				continue
			}
			stop[c] = true
		} else if sp, ok := s.spent[cs.ID]; ok && sp.equal(cs) {
			// It ran and stopped for good (a temporary child is never
			// restarted); unchanged, it stays gone.
			continue
		}
		delete(s.spent, cs.ID)
		next = append(next, newChild(cs, s.typeOf(cs.Process), true))
	}
	for id := range s.spent {
		if !declared[id] {
			delete(s.spent, id) // declared again later, it is a new child
		}
	}
	for _, c := range old {
		stop[c] = true
	}
	for _, c := range s.children {
		if !c.declared {
			if declared[c.spec.ID] {
				stop[c] = true // a declared child now owns its id
				continue
			}
			next = append(next, c)
		}
	}
	for i := len(s.children) - 1; i >= 0; i-- {
		if c := s.children[i]; stop[c] {
			s.stopChild(c)
		}
	}
	s.spec = ns
	s.setChildren(slices.Clip(next))
	for _, c := range s.children {
		if c.status != StatusStarting {
			continue
		}
		if err := s.spawnChild(c); err != nil {
			// Retried on the loop like any failed restart.
			s.log.Error("child start after reload failed", "child", c.spec.ID, "error", err)
			s.env.RenewalFailed(s.pid, c.spec.ID, c.spec.Process, err)
			s.set(c, StatusRestarting)
			s.retry = true
		}
	}
	// A stopped child whose id is still declared was changed: it started
	// again on its new declaration; the others were removed.
	restarted := 0
	for c := range stop {
		if declared[c.spec.ID] {
			restarted++
		}
	}
	s.log.Info("supervisor updated in place", "children", len(s.children), "restarted", restarted, "removed", len(stop)-restarted)
	s.restartOutdated()
	return true
}

// setOnReload changes c's on_reload, which needs no restart.
func (s *Supervisor) setOnReload(c *child, a ReloadAction) {
	if c.spec.OnReload != a {
		c.spec.OnReload = a
		s.show(c)
	}
}
