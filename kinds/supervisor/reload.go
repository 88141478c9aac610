package supervisor

import (
	"context"
	"slices"

	"github.com/proctor-run/proctor/registry"
)

// What a reload does to the children: each child remembers the digest of
// the entry it was spawned from, however it was started (declared, added
// with StartChild, a partition's worker), and a reload that changes that
// entry restarts the child on the new definition through the
// supervisor's own machinery: the strategy says which siblings restart
// with it, each stops within its shutdown deadline, and none of it counts
// toward the restart intensity, since a reload is no failure.

var _ registry.Refresher = (*Supervisor)(nil)

// Refresh implements registry.Refresher: it restarts the children whose
// definition changed, then refreshes the trees nested below, top down (a
// nested tree whose own entry changed is restarted whole, fresh, rather
// than refreshed). A nested tree refreshes with its root: called on one
// whose parent supervisor runs, Refresh does nothing.
func (s *Supervisor) Refresh(ctx context.Context) error {
	if !s.parent.IsZero() {
		if _, ok := supervisorAt(s.env, s.parent); ok {
			return nil
		}
	}
	return s.refresh(ctx)
}

func (s *Supervisor) refresh(ctx context.Context) error {
	var subs []*Supervisor
	err := s.call(ctx, func() error {
		s.restartOutdated()
		for _, c := range s.children {
			if c.typ != SupervisorType || c.pid.IsZero() {
				continue
			}
			if sub, ok := s.ByPID(c.pid); ok {
				subs = append(subs, sub)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Outside this loop: it stays free while the subtrees restart theirs.
	for _, sub := range subs {
		if err := sub.refresh(ctx); err != nil && ctx.Err() != nil {
			return err
		}
	}
	return nil
}

// outdated reports whether c runs a definition that is no longer the one
// in force and should be restarted on the new one. A child whose entry is
// gone keeps running: there is nothing to restart it on.
func (s *Supervisor) outdated(c *child) bool {
	if c.pid.IsZero() || c.digest == "" || c.spec.OnReload == ReloadKeep || s.env.Entries == nil {
		return false
	}
	e, ok := s.env.Entries.Entry(c.spec.Process)
	return ok && e.Digest != c.digest
}

// restartOutdated restarts, on the loop, the children on a changed
// definition and the siblings the strategy restarts with them: under
// one_for_one each alone (stopped, then started again before the next,
// so a partition's other workers keep serving); under all_for_one and
// rest_for_one the group of them all, stopped in reverse order and
// started in order.
func (s *Supervisor) restartOutdated() {
	var stale []*child
	for _, c := range s.children {
		if s.outdated(c) {
			stale = append(stale, c)
		}
	}
	stale = s.upgradeOutdated(stale)
	if len(stale) == 0 {
		return
	}
	if s.spec.Strategy == OneForOne {
		for _, c := range stale {
			s.reloadSet([]*child{c}, stale)
		}
	} else {
		// The strategy's group, whatever the children's on_failure.
		in := map[*child]bool{}
		var buf []*child
		for _, c := range stale {
			buf = buf[:0]
			if s.spec.Strategy == AllForOne {
				buf = allForOne(buf, s.children, c)
			} else {
				buf = restForOne(buf, s.children, c)
			}
			for _, g := range buf {
				in[g] = true
			}
		}
		group := make([]*child, 0, len(in))
		for _, c := range s.children {
			if in[c] {
				group = append(group, c)
			}
		}
		s.reloadSet(group, stale)
	}
	s.log.Info("children restarted on a new definition", "changed", len(stale))
}

// reloadSet stops set in reverse order and starts it again in order. A
// temporary bystander is stopped and dropped, as on a failure; a child
// whose own definition changed (in stale) starts again whatever its
// restart type. A child that cannot be spawned is retried on the loop,
// as a failed restart is.
func (s *Supervisor) reloadSet(set, stale []*child) {
	for i := len(set) - 1; i >= 0; i-- {
		s.stopChild(set[i])
		s.set(set[i], StatusRestarting)
	}
	for _, c := range set {
		if c.spec.Restart == Temporary && !slices.Contains(stale, c) {
			s.remove(c)
			continue
		}
		if err := s.spawnChild(c); err != nil {
			s.log.Error("child start on a new definition failed", "child", c.spec.ID, "error", err)
			if slices.Contains(stale, c) {
				s.env.RenewalFailed(s.pid, c.spec.ID, c.spec.Process, err)
			}
			s.retry = true
		}
	}
}
