package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Tasks: an entry whose restart type is transient or temporary may
// complete (its process returns normally). What depends on such an entry
// through a running reference (depends_on, a group's scope) is done with
// it when it has completed, not when it started: "run the migrations,
// then start the service". So a dependent whose task is still running
// waits, in status starting, and the loop starts it when the task
// completes; it fails when the task fails for good, or when its own
// start_timeout passes first.

// waitingStart is an entry whose start waits for tasks.
type waitingStart struct {
	timer *time.Timer
}

// startupWatch lets Start wait for the starts that wait for tasks: done
// closes once none waits any more, or one failed (err).
type startupWatch struct {
	done chan struct{}
	err  error
}

type verdict int

const (
	depsReady verdict = iota
	depsWait
	depsFailed
)

// depsOf says whether id may start now, in snap: its running dependencies
// that must run are running, or, for tasks, completed. dep is the first
// one it waits for or that failed, why the failure.
func (rt *Runtime) depsOf(snap *snapshot, id registry.ID) (v verdict, dep registry.ID, why error) {
	for _, r := range snap.cfg.Entries[id].Refs {
		if r.Mode != registry.RefRunning || !rt.runSet[r.To] {
			continue
		}
		ds := snap.slots[r.To]
		if ds == nil {
			continue
		}
		if rt.waiting[r.To] != nil {
			return depsWait, r.To, nil
		}
		st := ds.state.Load()
		task := ds.entry.Lifecycle.Restart.Type.Task()
		switch {
		case st.Status == StatusCompleted:
		case st.Status == StatusRunning && !task:
		case task && st.Instance != nil && (st.Status == StatusRunning || st.Status == StatusStarting):
			// Running, or failed and waiting for its restart.
			return depsWait, r.To, nil
		case st.Status == StatusFailed:
			return depsFailed, r.To, fmt.Errorf("dependency %s failed", r.To)
		default:
			return depsFailed, r.To, fmt.Errorf("dependency %s is not running", r.To)
		}
	}
	return depsReady, "", nil
}

// launch starts id of snap, or has it wait while a task it depends on
// runs; on the loop. A dependency that cannot run fails it.
func (rt *Runtime) launch(ctx context.Context, snap *snapshot, id registry.ID) error {
	rt.unwait(id)
	switch v, dep, why := rt.depsOf(snap, id); v {
	case depsWait:
		rt.wait(snap, id, dep)
		return nil
	case depsFailed:
		rt.failStart(snap.slots[id], why)
		return fmt.Errorf("start %s: %w", id, why)
	}
	return rt.startEntry(ctx, id)
}

// failStart marks the entry of s failed before it could start.
func (rt *Runtime) failStart(s *slot, why error) {
	prev := s.state.Load()
	s.set(EntryState{Status: StatusFailed, Err: why, Restarts: prev.Restarts})
	rt.setFailedCheck(s.entry.ID, why)
	rt.log.Error("entry failed to start", "entry", string(s.entry.ID), "error", why)
}

// wait has id wait for dep, at most its start_timeout.
func (rt *Runtime) wait(snap *snapshot, id, dep registry.ID) {
	s := snap.slots[id]
	prev := s.state.Load()
	s.set(EntryState{Status: StatusStarting, Restarts: prev.Restarts,
		Err: value.NewError(value.KindStopped, "waiting for %s to complete", dep)})
	d := rt.env.StartTimeout(s.entry)
	w := &waitingStart{}
	w.timer = time.AfterFunc(d, func() {
		_ = rt.loop.Submit(func() { rt.expire(id, w, d) })
	})
	rt.waiting[id] = w
	rt.log.Info("entry waits for a task it depends on to complete", "entry", string(id), "task", string(dep), "timeout", d)
}

// unwait drops id's waiting start, if it has one.
func (rt *Runtime) unwait(id registry.ID) {
	if w := rt.waiting[id]; w != nil {
		w.timer.Stop()
		delete(rt.waiting, id)
	}
}

// expire fails a start that waited its whole start_timeout.
func (rt *Runtime) expire(id registry.ID, w *waitingStart, d time.Duration) {
	if rt.waiting[id] != w {
		return // started, failed or stopped meanwhile
	}
	snap := rt.snap.Load()
	_, dep, _ := rt.depsOf(snap, id)
	rt.unwait(id)
	err := fmt.Errorf("dependency %s did not complete within start_timeout %s", dep, d)
	rt.failStart(snap.slots[id], err)
	rt.noteStartup(fmt.Errorf("start %s: %w", id, err))
	rt.kick()
}

// kick starts the waiting entries whose tasks have completed and fails
// those whose tasks failed; on the loop, after any change of state that
// may settle one.
func (rt *Runtime) kick() {
	defer rt.settleStartup()
	if len(rt.waiting) == 0 {
		return
	}
	snap := rt.snap.Load()
	// Dependencies come first in Order, so one pass settles a chain.
	for _, id := range snap.cfg.Order {
		if rt.waiting[id] == nil {
			continue
		}
		if s := snap.slots[id]; s == nil || !rt.runSet[id] {
			rt.unwait(id)
			continue
		}
		v, _, why := rt.depsOf(snap, id)
		if v == depsWait {
			continue
		}
		rt.unwait(id)
		var err error
		if v == depsFailed {
			rt.failStart(snap.slots[id], why)
			err = fmt.Errorf("start %s: %w", id, why)
		} else {
			err = rt.startEntry(context.Background(), id)
		}
		if err != nil {
			rt.noteStartup(err)
		}
	}
	// Entries no longer in the configuration do not wait.
	for id := range rt.waiting {
		if _, ok := snap.slots[id]; !ok {
			rt.unwait(id)
		}
	}
}

// noteStartup records the first start that failed while Start waits.
func (rt *Runtime) noteStartup(err error) {
	if rt.startup != nil && rt.startup.err == nil {
		rt.startup.err = err
	}
}

// settleStartup lets Start go on once nothing waits or a start failed.
func (rt *Runtime) settleStartup() {
	if w := rt.startup; w != nil && (len(rt.waiting) == 0 || w.err != nil) {
		rt.startup = nil
		close(w.done)
	}
}
