package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/proctor-run/proctor/internal/backoff"
	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
	"github.com/proctor-run/proctor/value"
)

// RootRuntime is what the root supervisor needs from the runtime whose
// entries it owns; *runtime.Runtime implements it. The runtime stays the
// authority on which instance is current: every call names the instance it
// is about, and one the runtime has stopped or replaced is refused with
// runtime.ErrNotCurrent.
type RootRuntime interface {
	Entry(id registry.ID) (*registry.Entry, bool)
	Exited(ctx context.Context, id registry.ID, pid process.PID, exit process.Exit) (restart bool, err error)
	Restart(ctx context.Context, id registry.ID, old process.PID) (registry.Instance, error)
	Fail(ctx context.Context, id registry.ID, old process.PID, reason error) error
}

// RootOptions configure the root supervisor. Node and Runtime are required.
type RootOptions struct {
	Node    *process.Node
	Runtime RootRuntime
	// Logger for restarts and give-ups. Default: slog.Default().
	Logger *slog.Logger
	// Jitter returns a number in [0, 1) that spreads restart delays by
	// ±20% so entries that failed together do not restart in lockstep.
	// Default: math/rand/v2.Float64.
	Jitter func() float64
}

// Root is the root supervisor: a process that monitors every running
// entry's instance and, when its exit calls for a restart by the entry's
// lifecycle.restart.type (permanent: any exit; transient: a failure;
// temporary: none — the runtime decides, see runtime.Runtime.Exited),
// restarts it after its lifecycle.restart backoff (initial_delay, growing
// by backoff_factor up to max_delay, with jitter). Past max_attempts it
// gives up and the runtime marks the entry failed. Unlike an ordinary
// supervisor it never escalates: there is nobody above it, and one broken
// entry must not take the others down.
//
// An instance that stays up for at least max_delay, and at least
// MinRecovery, counts as recovered: its attempt count and delay start
// over. (With max_delay alone, a max_delay of a millisecond made every
// crash a recovery, and max_attempts was never reached.) Every delay is at
// least MinRestartDelay, so a zero backoff cannot spin. The restart lines
// of an entry are rate-limited (see internal/logging.Limiter): a crash loop does
// not flood the log.
type Root struct {
	node   *process.Node
	logs   *logging.Limiter
	rt     RootRuntime
	log    *slog.Logger
	jitter func() float64
	pid    process.PID
	done   <-chan struct{}
	exit   func() process.Exit
}

type rootWatch struct {
	id   registry.ID
	inst registry.Instance
	// gone: the instance's process had exited when Watch ran, and the
	// root did not know whether it monitored it (see unseenGrace).
	gone bool
}

// rootUnseen asks whether the EXIT of a process gone at its watch came.
type rootUnseen struct{ pid process.PID }

// unseenGrace is how long the root waits for the EXIT of an instance
// whose process was gone when Watch ran. Monitored from its spawn, its
// EXIT is sent by its teardown the moment after; if none comes, its kind
// ignored StartOptions.MonitorBy and the exit is lost.
const unseenGrace = time.Second

type rootRestart struct {
	id  registry.ID
	old process.PID
}

// StartRoot spawns the root supervisor's process.
func StartRoot(opts RootOptions) (*Root, error) {
	if opts.Node == nil || opts.Runtime == nil {
		return nil, errors.New("root supervisor: Node and Runtime are required")
	}
	r := &Root{node: opts.Node, rt: opts.Runtime, log: opts.Logger, jitter: opts.Jitter, logs: &logging.Limiter{}}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.jitter == nil {
		r.jitter = rand.Float64
	}
	// Its PID is easy to guess (the node's first), so it is a system
	// process: scripts cannot terminate it, and a script linked to it
	// that crashes sends it a LINK_DOWN it ignores, as an OTP supervisor
	// trapping exits ignores a non-child's exit signal.
	pid, err := r.node.SpawnFunc(r.run, process.SpawnOptions{System: true})
	if err != nil {
		return nil, fmt.Errorf("root supervisor: %w", err)
	}
	r.pid = pid
	done, exit, ok := r.node.Done(pid)
	if !ok {
		return nil, fmt.Errorf("root supervisor: exited at once: %w", process.ErrNoProcess)
	}
	r.done, r.exit = done, exit
	return r, nil
}

// PID returns the root supervisor's process.
func (r *Root) PID() process.PID { return r.pid }

// Done is closed when the root supervisor's process has exited, whether
// Stop ended it or it died. After that no failed entry is restarted: a
// runner must not carry on as if nothing happened.
func (r *Root) Done() <-chan struct{} { return r.done }

// Exit returns how the root supervisor's process ended; call it after
// Done is closed.
func (r *Root) Exit() process.Exit { return r.exit() }

// Alive reports whether the root supervisor still runs. The registry asks
// it to tell an entry whose process exited and that will be restarted
// (starting) from one nobody will restart any more (failed).
func (r *Root) Alive() bool { return r.node.Alive(r.pid) }

// Watch implements runtime.Owner: the root starts watching inst, which
// it monitors from its spawn (registry.StartOptions.MonitorBy is the
// root's PID). It never blocks (the runtime calls it from its loop).
func (r *Root) Watch(id registry.ID, inst registry.Instance) {
	pid := inst.PID()
	monitored, alive := r.node.Monitors(r.pid, pid)
	if alive && !monitored {
		// Its kind ignored StartOptions.MonitorBy: monitor it now, on the
		// caller's goroutine, and say so, since an exit of such an
		// instance in the moment before this is lost. (Monitoring a
		// process monitored from its spawn would deliver a second EXIT
		// once it is gone, hence only here.)
		r.log.Error("root supervisor: the kind of entry did not have the root monitor its instance from its spawn (registry.StartOptions.MonitorBy); monitoring it now", "entry", string(id), "pid", pid.String())
		if err := r.node.Monitor(r.pid, pid); err != nil {
			r.log.Error("root supervisor cannot monitor entry", "entry", string(id), "error", err)
		}
	}
	if err := r.node.Send(r.pid, process.Message{Topic: "watch", Payload: rootWatch{id: id, inst: inst, gone: !alive}}); err != nil {
		r.log.Error("root supervisor cannot watch entry", "entry", string(id), "error", err)
	}
}

// Stop ends the root supervisor; pending restarts are dropped.
func (r *Root) Stop(ctx context.Context) error {
	_, err := r.node.Stop(ctx, r.pid)
	if errors.Is(err, process.ErrNoProcess) {
		return nil
	}
	return err
}

// rootState is owned by the root's goroutine.
type rootState struct {
	r        *Root
	p        *process.Proc
	byPID    map[process.PID]rootRunning
	early    earlyExits // EXITs that beat their watch message
	attempts map[registry.ID]int
	timers   map[registry.ID]rootTimer
	own      map[process.PID]bool // instances of the root's own restarts, until watched
}

// rootTimer is the pending restart of an entry, and the instance it
// replaces.
type rootTimer struct {
	t   *time.Timer
	old process.PID
}

type rootRunning struct {
	id    registry.ID
	since time.Time
}

func (r *Root) run(p *process.Proc) (any, error) {
	s := &rootState{r: r, p: p, byPID: map[process.PID]rootRunning{}, attempts: map[registry.ID]int{}, timers: map[registry.ID]rootTimer{}, own: map[process.PID]bool{}}
	defer func() {
		for _, t := range s.timers {
			t.t.Stop()
		}
	}()
	ctx := p.Context()
	for {
		worked := false
		if m, ok := p.TryReceive(); ok {
			s.message(m)
			worked = true
		}
		if e, ok := p.TryEvent(); ok {
			s.event(e)
			worked = true
		}
		if worked {
			continue
		}
		p.Arm()
		if p.Pending() > 0 {
			p.Disarm()
			continue
		}
		if e, ok := p.TryEvent(); ok {
			p.Disarm()
			s.event(e)
			continue
		}
		select {
		case <-p.Wake():
		case <-ctx.Done():
			return nil, nil
		}
	}
}

func (s *rootState) message(m process.Message) {
	switch v := m.Payload.(type) {
	case rootWatch:
		s.watch(v.id, v.inst, v.gone)
	case rootUnseen:
		if _, ok := s.byPID[v.pid]; ok {
			s.event(process.Event{Kind: process.EventExit, From: v.pid, Exit: process.Exit{Err: process.ErrNoProcess}})
		}
	case rootRestart:
		// Only the latest pending restart of an entry counts: an older
		// one, already sent when it was superseded, is for an instance
		// that is gone.
		if t, ok := s.timers[v.id]; !ok || t.old != v.old {
			return
		}
		delete(s.timers, v.id)
		s.restart(v.id, v.old)
	}
}

func (s *rootState) watch(id registry.ID, inst registry.Instance, gone bool) {
	pid := inst.PID()
	if s.own[pid] {
		delete(s.own, pid)
	} else {
		// The runtime started this instance itself (start-up, or a reload
		// that replaced the entry, possibly while it waited for a restart):
		// it gets a fresh attempt budget, and a restart still pending is
		// for an instance that is gone.
		if t, ok := s.timers[id]; ok {
			t.t.Stop()
			delete(s.timers, id)
		}
		delete(s.attempts, id)
	}
	s.byPID[pid] = rootRunning{id: id, since: time.Now()}
	if e, ok := s.early.take(pid); ok {
		s.event(e)
	} else if gone {
		self, node := s.p.Self(), s.r.node
		time.AfterFunc(unseenGrace, func() {
			_ = node.Send(self, process.Message{Topic: "unseen", Payload: rootUnseen{pid: pid}})
		})
	}
}

func (s *rootState) event(e process.Event) {
	if e.Kind != process.EventExit {
		return
	}
	w, ok := s.byPID[e.From]
	if !ok {
		// The instance is monitored from its spawn: this EXIT's watch
		// is on its way, or it never comes (see earlyExits).
		s.early.add(e)
		return
	}
	delete(s.byPID, e.From)
	if errors.Is(e.Exit.Err, process.ErrNoProcess) {
		// Its kind ignored MonitorBy, and it was gone by the time Watch
		// could monitor it: its own exit is lost to the root, so say
		// what happened rather than a bare "no such process".
		e.Exit.Err = fmt.Errorf("its process %s exited as soon as it started, before the root supervisor could monitor it (its kind did not have it monitored from its spawn; its crash report, if any, has the error): %w", e.From, e.Exit.Err)
	}
	restart, err := s.r.rt.Exited(s.p.Context(), w.id, e.From, e.Exit)
	if err != nil || !restart {
		// Not current: the runtime stopped or replaced it on purpose.
		delete(s.attempts, w.id)
		return
	}
	entry, ok := s.r.rt.Entry(w.id)
	if !ok {
		return
	}
	if time.Since(w.since) >= max(entry.Lifecycle.Restart.MaxDelay, MinRecovery) {
		s.attempts[w.id] = 0
	}
	reason := e.Exit.Err
	if reason == nil {
		reason = errReturned
	}
	s.failed(w.id, e.From, reason)
}

// errReturned is why a permanent entry that returned normally is restarted.
var errReturned = value.NewError(value.KindStopped, "returned normally (restart type permanent)")

// failed decides what follows a failure of id's instance old: a restart
// after the backoff, or giving up.
func (s *rootState) failed(id registry.ID, old process.PID, reason error) {
	entry, ok := s.r.rt.Entry(id)
	if !ok {
		return
	}
	pol := entry.Lifecycle.Restart
	n := s.attempts[id]
	if pol.MaxAttempts > 0 && n >= pol.MaxAttempts {
		delete(s.attempts, id)
		err := fmt.Errorf("gave up after %d restart attempts: %w", n, reason)
		if ferr := s.r.rt.Fail(s.p.Context(), id, old, err); ferr != nil && !errors.Is(ferr, runtime.ErrNotCurrent) {
			s.r.log.Error("root supervisor cannot mark entry failed", "entry", string(id), "error", entry.ShowError(ferr))
		}
		return
	}
	n++
	s.attempts[id] = n
	d := s.r.backoff(pol, n)
	if s.r.logs.AllowLog(s.r.log, slog.LevelInfo, "entry", string(id), "restarting entry") {
		s.r.log.Info("restarting entry", "entry", string(id), "attempt", n, "delay", d, "error", entry.ShowError(reason))
	}
	self, node := s.p.Self(), s.r.node
	if prev, ok := s.timers[id]; ok {
		prev.t.Stop()
	}
	s.timers[id] = rootTimer{old: old, t: time.AfterFunc(d, func() {
		// The root may be gone by now; then the restart is moot.
		_ = node.Send(self, process.Message{Topic: "restart", Payload: rootRestart{id: id, old: old}})
	})}
}

func (s *rootState) restart(id registry.ID, old process.PID) {
	inst, err := s.r.rt.Restart(s.p.Context(), id, old)
	switch {
	case err == nil:
		// The runtime called Watch before it published inst: the monitor
		// is in place and the watch message is on its way. Monitoring
		// only now would take an instance that already returned normally
		// for one that failed (its EXIT would say "no such process").
		// The watch must keep this entry's attempt count.
		s.own[inst.PID()] = true
	case errors.Is(err, runtime.ErrNotCurrent), errors.Is(err, runtime.ErrRuntimeStopped), s.p.Context().Err() != nil:
		delete(s.attempts, id)
	default:
		s.failed(id, old, err)
	}
}

// Floors of the root's restart policy.
const (
	// MinRestartDelay is the shortest delay before a restart, whatever
	// the policy says: a 0 delay would restart a crashing entry in a
	// tight loop.
	MinRestartDelay = 10 * time.Millisecond
	// MinRecovery is the shortest time an instance must stay up to count
	// as recovered (see Root).
	MinRecovery = 10 * time.Second
)

// backoff returns the delay before restart attempt n (1-based): the
// policy's delay, capped at max_delay, spread by ±20%, and at least
// MinRestartDelay. A spread delay past max_delay is reflected below it, so
// entries that keep failing together still restart apart once their
// delays reach the cap (clamping would restart them all at exactly
// max_delay).
func (r *Root) backoff(p registry.RestartPolicy, n int) time.Duration {
	d := backoff.Policy{Initial: p.InitialDelay, Max: p.MaxDelay, Factor: p.BackoffFactor, Jitter: 0.2, Rand: r.jitter}.Delay(n - 1)
	return max(d, MinRestartDelay)
}
