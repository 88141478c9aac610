package lua

import (
	"fmt"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Starting a process returns when it is ready, as OTP's init/1 makes
// start_link wait: a script may define init beside its method. init runs
// first, on the new process, with the process's arguments; the spawner
// (process.spawn, supervisor.start_child, a pool, the runtime) waits until
// it has returned, and main gets what init returned. If loading the
// script or init raises, or init is still running after the entry's start
// timeout, the start fails with that error and the process is gone before
// the spawner hears of it (its name free again). A script that surely
// defines no init (its shape shows what it defines, see Compiled) is not
// waited for: its spawner returns at once, as before.

// starting is a spawner waiting for its process to be ready.
type starting struct {
	ready chan error // capacity 1: the process never blocks on it
	// The spawner's links and monitors: a process that fails to start
	// removes them, so that only the spawner's error tells of it.
	linkTo, monitorBy process.PID
}

// mayInit reports whether a process of spec may define init, so that its
// spawner must wait for it.
func (spec *Spec) mayInit() bool {
	if spec.Method == initName {
		return false
	}
	has, known := spec.main.HasMethod(initName)
	return has || !known
}

// started tells a waiting spawner how the start went, once, and returns
// err. A failed start unlinks the process from the spawner and drops its
// monitor first: the spawner learns of the failure from its error, and a
// linked spawner must not be taken down by a child it never had.
func (p *Process) started(err error) error {
	st := p.start
	if st == nil {
		return err
	}
	p.start = nil
	if err != nil {
		if !st.linkTo.IsZero() {
			p.Node().Unlink(p.self, st.linkTo)
		}
		if !st.monitorBy.IsZero() {
			p.Node().Demonitor(st.monitorBy, p.self)
		}
	}
	st.ready <- err
	return err
}

// awaitStart waits until the process pid of e is ready. On a failed
// start it returns the error once the process has exited; past the start
// timeout (the entry's lifecycle.start_timeout, or the runtime's) it kills
// the process.
func (h *Host) awaitStart(env *registry.Env, e *registry.Entry, pid process.PID, st *starting) error {
	done, _, alive := env.Node.Done(pid)
	d := env.StartTimeout(e)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-st.ready:
		if err == nil {
			return nil
		}
		if alive {
			<-done
		}
		// Not "spawn <id>": whoever spawned says that (a supervisor does).
		return fmt.Errorf("start failed: %w", err)
	case <-t.C:
		if !st.linkTo.IsZero() {
			env.Node.Unlink(pid, st.linkTo)
		}
		if !st.monitorBy.IsZero() {
			env.Node.Demonitor(st.monitorBy, pid)
		}
		_ = env.Node.Kill(pid)
		return value.NewError(value.KindTimeout, "start failed: init did not return within %s (the start timeout of %s); the process was killed", d, e.ID)
	}
}
