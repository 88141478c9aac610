package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// Status is the state of a child (or of a supervisor) as readers see it.
type Status string

const (
	StatusStarting   Status = "starting"
	StatusRunning    Status = "running"
	StatusRestarting Status = "restarting" // waiting for its replacement
	StatusStopping   Status = "stopping"
	StatusTerminated Status = "terminated" // spec kept, no process
	StatusStopped    Status = "stopped"    // the supervisor itself stopped
	StatusFailed     Status = "failed"     // the supervisor escalated
)

// ChildInfo describes one child in a snapshot.
type ChildInfo struct {
	ID      string
	Process registry.ID
	// PID is the zero PID while the child has no process.
	PID      process.PID
	Restart  RestartType
	Type     ChildType
	Status   Status
	Restarts int
	// Shutdown is the child's resolved stop deadline (BrutalKill,
	// Infinity, or a duration).
	Shutdown time.Duration
	// LastExit is how the child's last process ended: "normal", or its
	// error; "" while none has ended.
	LastExit string
}

// Counts is what CountChildren returns, as OTP's count_children: Specs
// counts every child spec, Active those with a running process,
// Supervisors and Workers the specs of each type.
type Counts struct {
	Specs       int
	Active      int
	Supervisors int
	Workers     int
}

// Supervisor is a running supervisor of any of the three kinds. It is the
// registry.Instance of its entry (or of a nested tree spawned as a child).
type Supervisor struct {
	id        registry.ID
	kind      string
	env       *registry.Env
	node      *process.Node
	log       *slog.Logger
	logs      logging.Limiter // child exits: a crash loop is a few lines, then a count
	met       *supMetrics
	parent    process.PID
	monitorBy process.PID // the spawner's monitor, dropped if the start fails
	ancestors []registry.ID
	pid       process.PID
	owner     process.Owner // the supervisor's process; set before Start returns
	callErrs  process.CallErrors
	snap      atomic.Pointer[snapshot]
	ran       chan struct{} // closed when run has returned
	exited    chan struct{} // closed once ran is and the process is torn down
	exitErr   atomic.Pointer[error]

	// Owned by the loop goroutine.
	state    Status
	spec     *Spec
	children []*child // start order
	slots    []*childSlot
	byID     map[string]*child
	byPID    map[process.PID]*child
	restarts []time.Time
	retry    bool // a restart failed to spawn; retried on the next turn
	// spent holds the specs of declared children that stopped for good and
	// were dropped (temporary ones, a dynamic supervisor's finished ones):
	// a reload that still declares one unchanged must not start it again.
	spent map[string]ChildSpec
}

var _ interface {
	registry.Instance
	registry.Stopper
	registry.Updater
	registry.Viewer
} = (*Supervisor)(nil)

// supervisorAt returns the live supervisor whose process is pid, from
// env's directory of instances: every supervisor, nested trees included,
// is there while it runs.
func supervisorAt(env *registry.Env, pid process.PID) (*Supervisor, bool) {
	inst, ok := env.Instances.Lookup(pid)
	if !ok {
		return nil, false
	}
	s, ok := inst.(*Supervisor)
	return s, ok
}

// ByPID returns the live supervisor of s's runtime whose process is pid:
// a nested tree's, when pid is a child of s.
func (s *Supervisor) ByPID(pid process.PID) (*Supervisor, bool) { return supervisorAt(s.env, pid) }

// Start runs a supervisor for spec and returns once every child has
// started, in declared order. If one fails to start, those already started
// are stopped in reverse order and the error is returned. opts are the
// supervisor process's own spawn options (a parent links and monitors
// through them); TrapLinks and System are always set.
func Start(ctx context.Context, env *registry.Env, id registry.ID, spec *Spec, opts process.SpawnOptions) (*Supervisor, error) {
	if spec == nil {
		return nil, fmt.Errorf("supervisor %s: %w: nil spec", id, ErrInvalidSpec)
	}
	if err := spec.check(); err != nil {
		return nil, fmt.Errorf("supervisor %s: %w", id, err)
	}
	s := &Supervisor{
		id:        id,
		callErrs:  process.CallErrors{What: "supervisor " + string(id), Stopped: ErrStopped},
		env:       env,
		node:      env.Node,
		met:       newSupMetrics(env.Metrics),
		parent:    opts.LinkTo,
		monitorBy: opts.MonitorBy,
		ran:       make(chan struct{}),
		exited:    make(chan struct{}),
		spec:      spec.withDefaults(),
		byID:      map[string]*child{},
		byPID:     map[process.PID]*child{},
		spent:     map[string]ChildSpec{},
	}
	s.kind = s.spec.Kind
	if env.Logger != nil {
		s.log = env.EntryLogger(id)
	} else {
		s.log = slog.New(slog.DiscardHandler).With("entry", string(id))
	}
	if p, ok := supervisorAt(env, opts.LinkTo); ok {
		s.ancestors = append(slices.Clone(p.ancestors), p.id)
		if slices.Contains(s.ancestors, id) {
			return nil, fmt.Errorf("supervisor %s: %w: %v -> %s", id, ErrCycle, s.ancestors, id)
		}
	}
	for _, c := range s.spec.Children {
		s.appendChild(newChild(c, s.typeOf(c.Process), true))
	}
	s.publishStatus(StatusStarting)
	// A supervisor is the runtime's: it traps links, so only its parent's
	// exit stops it (onEvent), and a script can neither terminate it nor
	// take it down with a link (process.SpawnOptions.System).
	opts.TrapLinks = true
	opts.System = true
	initDone := make(chan error, 1)
	pid, err := s.node.SpawnFunc(func(h *process.Proc) (any, error) { return s.run(h, initDone) }, opts)
	if err != nil {
		return nil, fmt.Errorf("supervisor %s: %w", id, err)
	}
	// Done is closed once the process is gone from the node, not only
	// once run returns: its caller may count the node's processes, or
	// look the PID up, the moment it is.
	procDone, _, alive := s.node.Done(pid)
	go func() {
		<-s.ran
		if alive {
			<-procDone
		}
		close(s.exited)
	}()
	select {
	case err := <-initDone:
		if err != nil {
			return nil, fmt.Errorf("supervisor %s: start: %w", id, err)
		}
		return s, nil
	case <-ctx.Done():
		// The loop stops what it started once it sees the request.
		go func() {
			if err := <-initDone; err == nil {
				_ = s.node.Terminate(s.pid)
			}
		}()
		return nil, fmt.Errorf("supervisor %s: start: %w", id, ctx.Err())
	}
}

// ID returns the supervisor's entry ID.
func (s *Supervisor) ID() registry.ID { return s.id }

// Kind returns the supervisor's kind name.
func (s *Supervisor) Kind() string { return s.kind }

// PID returns the supervisor's process.
func (s *Supervisor) PID() process.PID { return s.pid }

// Done is closed when the supervisor has stopped and every child with it.
func (s *Supervisor) Done() <-chan struct{} { return s.exited }

// Err returns why the supervisor stopped (nil while it runs, or when it was
// stopped on request).
func (s *Supervisor) Err() error {
	if p := s.exitErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Stop terminates the supervisor, which stops its children in reverse
// order, each within its shutdown deadline. When ctx ends first, the
// supervisor and every child still alive are killed.
func (s *Supervisor) Stop(ctx context.Context) error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.node.Terminate(s.pid)
	select {
	case <-s.exited:
		return nil
	case <-ctx.Done():
		_ = s.node.Kill(s.pid)
		s.killTree()
		<-s.exited
		return fmt.Errorf("supervisor %s: stop: %w", s.id, ctx.Err())
	}
}

// stopMargin is what a supervisor's own teardown may add to its
// children's deadlines.
const stopMargin = time.Second

// ShutdownTimeout implements registry.ShutdownTimer: the children stop one
// by one, each within its shutdown deadline, so the tree needs their sum.
// A child that may take forever (Infinity, the default for a nested
// supervisor) makes it 0: no limit, as in OTP.
func (s *Supervisor) ShutdownTimeout() time.Duration {
	total := stopMargin
	for _, c := range s.snap.Load().infos() {
		if c.PID.IsZero() {
			continue
		}
		switch c.Shutdown {
		case Infinity:
			return 0
		case BrutalKill:
		default:
			total += c.Shutdown
		}
	}
	return total
}

// killTree kills every process of the tree below s, deepest first, so a
// child that ignores shutdown cannot outlive its supervisor's deadline.
func (s *Supervisor) killTree() {
	for _, c := range s.snap.Load().infos() {
		if c.PID.IsZero() {
			continue
		}
		if sub, ok := s.ByPID(c.PID); ok {
			_ = s.node.Kill(sub.pid)
			sub.killTree()
		}
		_ = s.node.Kill(c.PID)
	}
}

// WhichChildren lists the children in start order, from a snapshot.
func (s *Supervisor) WhichChildren() []ChildInfo {
	return s.snap.Load().infos()
}

// CountChildren counts the children, from a snapshot.
func (s *Supervisor) CountChildren() Counts {
	var c Counts
	for _, sl := range s.snap.Load().slots {
		ch := sl.info.Load()
		c.Specs++
		if !ch.PID.IsZero() && ch.Status == StatusRunning {
			c.Active++
		}
		if ch.Type == SupervisorType {
			c.Supervisors++
		} else {
			c.Workers++
		}
	}
	return c
}

// Status returns the supervisor's own status.
func (s *Supervisor) Status() Status { return s.snap.Load().status }

// call runs fn on the supervisor's loop and waits for it. A command whose
// caller gave up (ctx) still runs.
func (s *Supervisor) call(ctx context.Context, fn func() error) error {
	return process.RunOnAs(ctx, s.owner, process.CommandFunc(fn), process.CallOptions{}, s.callErrs)
}

// StartChild adds and starts a child. A dynamic supervisor accepts any new
// id (up to max_children); a static one only restarts a child of its own
// that is terminated (OTP's restart_child); a partition supervisor refuses.
func (s *Supervisor) StartChild(ctx context.Context, spec ChildSpec) (process.PID, error) {
	// The id and the name are labels (views, log lines, a metric's
	// child label): bounded before anything quotes them.
	if err := process.CheckName(fmt.Sprintf("supervisor %s: start child: id", s.id), spec.ID); err != nil {
		return process.PID{}, err
	}
	if err := process.CheckName(fmt.Sprintf("supervisor %s: start child: name", s.id), spec.Name); err != nil {
		return process.PID{}, err
	}
	if s.kind == KindPartition {
		return process.PID{}, fmt.Errorf("supervisor %s: start child %q: %w", s.id, spec.ID, ErrFixedChildren)
	}
	if err := validateChild(spec); err != nil {
		return process.PID{}, fmt.Errorf("supervisor %s: start child %q: %w", s.id, spec.ID, err)
	}
	spec = spec.withDefaults()
	var pid process.PID
	err := s.call(ctx, func() error {
		p, err := s.startChild(spec)
		pid = p
		return err
	})
	return pid, err
}

// checkChildName refuses a name no process may hold, and names with ':',
// which are the entries' (an auto_start service is registered under its
// ID).
func checkChildName(name string) error {
	switch {
	case name == "" || process.IsPIDString(name):
		return fmt.Errorf("%q is not a name a process can be registered under", name)
	case strings.Contains(name, ":"):
		return fmt.Errorf("%q: names with ':' are reserved for entries (namespace:entry)", name)
	case strings.Contains(name, "@"):
		return fmt.Errorf("%q: names hold no '@' (name@node addresses a name on another node)", name)
	}
	return nil
}

// TerminateChild stops a child within its shutdown deadline. A dynamic
// supervisor forgets it; a static one keeps its spec (status terminated,
// StartChild with the same spec restarts it) unless it is temporary.
func (s *Supervisor) TerminateChild(ctx context.Context, id string) error {
	if s.kind == KindPartition {
		return fmt.Errorf("supervisor %s: terminate child %q: %w", s.id, id, ErrFixedChildren)
	}
	return s.call(ctx, func() error {
		c, ok := s.byID[id]
		if !ok {
			return fmt.Errorf("supervisor %s: terminate child %q: %w", s.id, id, ErrNoChild)
		}
		s.stopChild(c)
		if s.kind == KindDynamic || c.spec.Restart == Temporary {
			s.remove(c)
		} else {
			s.set(c, StatusTerminated)
		}
		return nil
	})
}

// run is the supervisor's process.
func (s *Supervisor) run(h *process.Proc, initDone chan<- error) (any, error) {
	s.pid = h.Self()
	// Commands submitted through the owner run inside h.TryReceive.
	s.owner = h.Owner()
	s.env.Instances.Add(s)
	defer func() {
		s.env.Instances.Remove(s)
		close(s.ran)
	}()
	if err := s.startInitial(); err != nil {
		// The spawner learns of the failure from Start's error: its
		// monitor goes first, or the exit reaches it too, as that of an
		// instance it was never given (registry.StartOptions).
		if !s.monitorBy.IsZero() {
			s.node.Demonitor(s.monitorBy, s.pid)
		}
		s.publishStatus(StatusFailed)
		s.exitErr.Store(&err)
		initDone <- err
		return nil, err
	}
	s.publishStatus(StatusRunning)
	initDone <- nil

	err := s.loop(h)
	if err != nil {
		s.publishStatus(StatusFailed)
		s.exitErr.Store(&err)
		return nil, err
	}
	s.publishStatus(StatusStopped)
	return nil, nil
}

// loop serves events and commands until the supervisor is asked to stop
// (nil) or escalates (its exit reason).
func (s *Supervisor) loop(h *process.Proc) error {
	ctx := h.Context()
	for {
		if ctx.Err() != nil {
			s.publishStatus(StatusStopping)
			s.stopAll()
			return nil
		}
		if ev, ok := h.TryEvent(); ok {
			if err := s.onEvent(ev); err != nil {
				return err
			}
			continue
		}
		if m, ok := h.TryReceive(); ok {
			s.onMessage(m)
			continue
		}
		if s.pendingRestarts() {
			if err := s.retryRestarts(); err != nil {
				return err
			}
			continue
		}
		h.Arm()
		if ev, ok := h.TryEvent(); ok {
			h.Disarm()
			if err := s.onEvent(ev); err != nil {
				return err
			}
			continue
		}
		if h.Pending() > 0 {
			h.Disarm()
			continue
		}
		select {
		case <-h.Wake():
		case <-ctx.Done():
		}
	}
}

func (s *Supervisor) onMessage(m process.Message) {
	s.log.Debug("supervisor ignores a message", "topic", m.Topic, "from", m.From.String())
	if m.CanReply() {
		_, _ = m.Reply(s.pid, nil, fmt.Errorf("supervisor %s: %w", s.id, ErrNoMessages))
	}
}

func (s *Supervisor) onEvent(ev process.Event) error {
	switch ev.Kind {
	case process.EventExit:
		c, ok := s.byPID[ev.From]
		if !ok {
			return nil // an old child we stopped ourselves
		}
		return s.onChildExit(c, ev.Exit)
	case process.EventLinkDown:
		if ev.From == s.parent && !s.parent.IsZero() {
			// The parent is gone: stop the tree, as an OTP supervisor
			// does on an exit signal from its parent.
			s.publishStatus(StatusStopping)
			s.stopAll()
			return &process.LinkError{From: ev.From, Reason: ev.Exit.Err}
		}
	}
	return nil
}
