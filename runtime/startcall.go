package runtime

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// A kind's Start runs on the runtime's loop, and a slow one (a Lua init
// that blocks until its start timeout) holds the loop: a reload that
// starts it, the root's restarts and Stop all wait. So a start is
// abandoned when the runtime stops or the caller's context ends, instead
// of being waited for: callStart returns at once, and the start goes on
// as an orphan whose instance, if it comes, is stopped. Shutdown always
// wins over a slow start.

// startGrace is how long past its start timeout a kind that does not
// honor its context is waited for before the start is abandoned.
const startGrace = time.Second

// The claims on a start's result (see callStart).
const (
	startPending int32 = iota
	startDelivered
	startAbandoned
)

type startResult struct {
	inst registry.Instance
	err  error
}

// callStart starts e through st within its start timeout, has the
// runtime's owner watch the instance, and returns it; see above for when
// it abandons the start.
func (rt *Runtime) callStart(ctx context.Context, st registry.Starter, e *registry.Entry) (registry.Instance, error) {
	select {
	case <-rt.halt:
		return nil, fmt.Errorf("start %s: %w", e.ID, ErrRuntimeStopped)
	default:
	}
	d := rt.env.StartTimeout(e)
	sctx, cancel := context.WithTimeout(ctx, d)
	res := make(chan startResult, 1)
	ob := rt.owner.Load()
	var opts registry.StartOptions
	if ob != nil {
		// The owner monitors the instance from its spawn, where the kind
		// honours it: one that exits the moment its start returns is
		// still seen with its own exit, not as "no such process".
		opts.MonitorBy = ob.o.PID()
	}
	// Who has the start's result: the start's goroutine claims it as
	// delivered, or callStart as abandoned, whichever comes first. The
	// instance of an abandoned start is never watched: the owner would
	// take it for one the runtime started itself and drop the restart it
	// has pending for the entry (and its attempt count), and the orphan
	// stops it anyway.
	var claim atomic.Int32 // startPending, startDelivered, startAbandoned
	go func() {
		inst, err := rt.runStart(sctx, st, e, opts)
		if claim.CompareAndSwap(startPending, startDelivered) && err == nil && ob != nil {
			// The owner watches at once, on this goroutine, and monitors
			// there what the kind left to it.
			ob.o.Watch(e.ID, inst)
		}
		res <- startResult{inst, err}
	}()
	late := time.NewTimer(d + startGrace)
	defer late.Stop()
	var why error
	select {
	case r := <-res:
		cancel()
		return r.inst, r.err
	case <-rt.halt:
		why = ErrRuntimeStopped
	case <-ctx.Done():
		why = ctx.Err()
	case <-late.C:
		why = value.NewError(value.KindTimeout, "did not start within its start timeout of %s", d)
	}
	if !claim.CompareAndSwap(startPending, startAbandoned) {
		// The start ended just now, and its instance is watched: it is
		// the result, as if it had come first.
		r := <-res
		cancel()
		return r.inst, r.err
	}
	cancel()
	rt.abandonStart(e, res, opts.MonitorBy)
	return nil, fmt.Errorf("start %s abandoned: %w", e.ID, why)
}

// runStart calls the kind's Start, turning a panic into an error.
func (rt *Runtime) runStart(ctx context.Context, st registry.Starter, e *registry.Entry, opts registry.StartOptions) (inst registry.Instance, err error) {
	defer func() {
		if r := recover(); r != nil {
			inst, err = nil, fmt.Errorf("kind %s panicked while starting: %v", e.Kind, r)
		}
	}()
	inst, err = st.Start(ctx, rt.env, e, opts)
	if err != nil {
		// A failed start has no instance to stop: a kind may return a
		// typed nil beside its error (*Supervisor(nil)), which is no nil
		// Instance, and stopping it crashed the node when a SIGINT
		// abandoned a start that then failed (TestSIGINTAtAnyPointOfStartUp).
		return nil, err
	}
	if inst == nil {
		err = fmt.Errorf("kind %s returned no instance", e.Kind)
	}
	return inst, err
}

// abandonStart leaves the start of e, whose result comes on res, to an
// orphan goroutine that stops the instance if one comes. A process
// already registered under e's ID is the instance being started (a
// process.lua entry's, waiting in its init): it is killed, so the start
// ends now rather than at its timeout. Both drop the monitor of
// monitorBy (the owner, StartOptions.MonitorBy) first: the owner is never
// told of the instance, so its exit is nothing of the owner's.
func (rt *Runtime) abandonStart(e *registry.Entry, res <-chan startResult, monitorBy process.PID) {
	node := rt.opts.Node
	drop := func(pid process.PID) {
		if !monitorBy.IsZero() {
			node.Demonitor(monitorBy, pid)
		}
	}
	if pid, ok := node.Whereis(string(e.ID)); ok {
		drop(pid)
		_ = node.Kill(pid)
	}
	rt.log.Warn("start abandoned", "entry", string(e.ID))
	rt.orphans.Add(1)
	go func() {
		defer rt.orphans.Done()
		r := <-res
		if r.inst == nil {
			return
		}
		drop(r.inst.PID())
		if err := rt.stopInstance(e.ID, e, r.inst); err != nil {
			rt.log.Warn("the instance of an abandoned start did not stop cleanly", "entry", string(e.ID), "error", e.ShowError(err))
		}
	}()
}

// waitOrphans waits for abandoned starts to end, until ctx ends or d
// passes; it reports whether they all ended.
func (rt *Runtime) waitOrphans(ctx context.Context, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		rt.orphans.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	rt.log.Warn("abandoned starts still running at shutdown: their instances are stopped when they come")
	return false
}
