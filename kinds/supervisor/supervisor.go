package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	digest   string // the child entry's digest when it was spawned
	declared bool   // from the entry's children (not started at run time)
	slot     *childSlot
}

func newChild(spec ChildSpec, typ ChildType, declared bool) *child {
	return &child{spec: spec, typ: typ, status: StatusStarting, declared: declared, slot: &childSlot{}}
}

// Supervisor is a running supervisor of any of the three kinds. It is the
// registry.Instance of its entry (or of a nested tree spawned as a child).
type Supervisor struct {
	id        registry.ID
	kind      string
	env       *registry.Env
	node      *process.Node
	log       *slog.Logger
	met       *supMetrics
	parent    process.PID
	ancestors []registry.ID
	pid       process.PID
	snap      atomic.Pointer[snapshot]
	exited    chan struct{}
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

// running maps the PID of every live supervisor to it, so nested trees
// (which have no entry instance of their own) can be found and viewed.
var running sync.Map // process.PID -> *Supervisor

// ByPID returns the live supervisor whose process is pid.
func ByPID(pid process.PID) (*Supervisor, bool) {
	v, ok := running.Load(pid)
	if !ok {
		return nil, false
	}
	return v.(*Supervisor), true
}

// Find resolves ref — an entry ID ("app:core") or a PID string — to a live
// supervisor.
func Find(env *registry.Env, ref string) (*Supervisor, error) {
	if process.IsPIDString(ref) {
		pid, err := process.ParsePID(ref)
		if err != nil {
			return nil, err
		}
		if s, ok := ByPID(pid); ok {
			return s, nil
		}
		return nil, fmt.Errorf("supervisor %s: %w", ref, ErrNotSupervisor)
	}
	if env == nil || env.Entries == nil {
		return nil, fmt.Errorf("supervisor %s: %w", ref, ErrNotSupervisor)
	}
	inst, ok := env.Entries.Instance(registry.ID(ref))
	if !ok {
		return nil, fmt.Errorf("supervisor %s: %w", ref, ErrNotSupervisor)
	}
	if s, ok := inst.(*Supervisor); ok {
		return s, nil
	}
	if s, ok := ByPID(inst.PID()); ok {
		return s, nil
	}
	return nil, fmt.Errorf("supervisor %s: %w", ref, ErrNotSupervisor)
}

// Start runs a supervisor for spec and returns once every child has
// started, in declared order. If one fails to start, those already started
// are stopped in reverse order and the error is returned. opts are the
// supervisor process's own spawn options (a parent links and monitors
// through them); TrapLinks and System are always set.
func Start(ctx context.Context, env *registry.Env, id registry.ID, spec *Spec, opts process.SpawnOptions) (*Supervisor, error) {
	if spec == nil {
		return nil, fmt.Errorf("supervisor %s: %w: nil spec", id, ErrInvalidSpec)
	}
	if err := spec.withDefaults().validate(); err != nil {
		return nil, fmt.Errorf("supervisor %s: %w", id, err)
	}
	s := &Supervisor{
		id:     id,
		env:    env,
		node:   env.Node,
		met:    metricsFor(env.Metrics),
		parent: opts.LinkTo,
		exited: make(chan struct{}),
		spec:   spec.withDefaults(),
		byID:   map[string]*child{},
		byPID:  map[process.PID]*child{},
		spent:  map[string]ChildSpec{},
	}
	s.kind = s.spec.Kind
	if env.Logger != nil {
		s.log = env.EntryLogger(id)
	} else {
		s.log = slog.New(slog.DiscardHandler).With("entry", string(id))
	}
	if p, ok := ByPID(opts.LinkTo); ok {
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
	if _, err := s.node.SpawnFunc(func(h *process.Proc) (any, error) { return s.run(h, initDone) }, opts); err != nil {
		return nil, fmt.Errorf("supervisor %s: %w", id, err)
	}
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
		if sub, ok := ByPID(c.PID); ok {
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

func (sn *snapshot) infos() []ChildInfo {
	out := make([]ChildInfo, len(sn.slots))
	for i, sl := range sn.slots {
		out[i] = *sl.info.Load()
	}
	return out
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

// command runs on the loop; its caller waits for done.
type command struct {
	fn   func() error
	err  error
	done chan struct{}
}

const commandTopic = "$supervisor.command"

// call runs fn on the supervisor's loop and waits for it. A command whose
// caller gave up (ctx) still runs.
func (s *Supervisor) call(ctx context.Context, fn func() error) error {
	cmd := &command{fn: fn, done: make(chan struct{})}
	if err := s.node.Send(s.pid, process.Message{Topic: commandTopic, Payload: cmd}); err != nil {
		return fmt.Errorf("supervisor %s: %w", s.id, ErrStopped)
	}
	select {
	case <-cmd.done:
		return cmd.err
	case <-s.exited:
		select {
		case <-cmd.done:
			return cmd.err
		default:
			return fmt.Errorf("supervisor %s: %w", s.id, ErrStopped)
		}
	case <-ctx.Done():
		return fmt.Errorf("supervisor %s: %w", s.id, ctx.Err())
	}
}

// StartChild adds and starts a child. A dynamic supervisor accepts any new
// id (up to max_children); a static one only restarts a child of its own
// that is terminated (OTP's restart_child); a partition supervisor refuses.
func (s *Supervisor) StartChild(ctx context.Context, spec ChildSpec) (process.PID, error) {
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

func validateChild(c ChildSpec) error {
	switch {
	case c.ID == "":
		return fmt.Errorf("%w: id is required", ErrInvalidChild)
	case c.Process == "":
		return fmt.Errorf("%w: process is required", ErrInvalidChild)
	}
	switch c.Restart {
	case "", Permanent, Transient, Temporary:
	default:
		return fmt.Errorf("%w: restart %q is not permanent, transient or temporary", ErrInvalidChild, c.Restart)
	}
	switch c.OnFailure {
	case "", ActionRestart, ActionStop, ActionEscalate, ActionResume:
	default:
		return fmt.Errorf("%w: on_failure %q is not restart, stop, escalate or resume", ErrInvalidChild, c.OnFailure)
	}
	if c.Shutdown < 0 && c.Shutdown != BrutalKill {
		return fmt.Errorf("%w: negative shutdown %s", ErrInvalidChild, c.Shutdown)
	}
	return nil
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
		Type: c.typ, Status: c.status, Restarts: c.restarts, Shutdown: c.spec.shutdownFor(c.typ),
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

// spawnChild instantiates c's entry, linked to and monitored by the
// supervisor before it runs, so no exit can be missed.
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
	pid, err := s.env.Entries.Spawn(c.spec.Process, registry.SpawnOptions{
		SpawnOptions: process.SpawnOptions{LinkTo: s.pid, MonitorBy: s.pid},
		Args:         c.spec.Args,
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
	switch d := c.spec.shutdownFor(c.typ); d {
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

// run is the supervisor's process.
func (s *Supervisor) run(h *process.Proc, initDone chan<- error) (any, error) {
	s.pid = h.Self()
	running.Store(s.pid, s)
	defer func() {
		running.Delete(s.pid)
		close(s.exited)
	}()
	if err := s.startInitial(); err != nil {
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
	cmd, ok := m.Payload.(*command)
	if !ok || m.Topic != commandTopic {
		s.log.Debug("supervisor ignores a message", "topic", m.Topic, "from", m.From.String())
		if m.CanReply() {
			_, _ = m.Reply(s.pid, nil, fmt.Errorf("supervisor %s: %w: supervisors take no messages", s.id, ErrInvalidChild))
		}
		return
	}
	cmd.err = cmd.fn()
	close(cmd.done)
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

// shutdownExit reports whether e is an exit a transient child is not
// restarted after: normal, or a requested shutdown.
func shutdownExit(e process.Exit) bool {
	return e.Err == nil || errors.Is(e.Err, process.ErrShutdown)
}

func (s *Supervisor) onChildExit(c *child, e process.Exit) error {
	s.setPID(c, process.PID{})
	if e.Err != nil && !errors.Is(e.Err, process.ErrShutdown) {
		s.log.Warn("child exited", "child", c.spec.ID, "error", e.Err)
	} else {
		s.log.Debug("child exited", "child", c.spec.ID)
	}
	switch c.spec.Restart {
	case Temporary:
		if s.kind == KindPartition {
			// A partition's slot count maps keys to workers: dropping
			// the slot would move the keys of every other worker.
			s.set(c, StatusTerminated)
			return nil
		}
		s.remove(c)
		return nil
	case Transient:
		if shutdownExit(e) {
			s.terminated(c)
			return nil
		}
	}
	reason := "exited normally"
	if e.Err != nil {
		reason = e.Err.Error()
	}
	switch c.spec.OnFailure {
	case ActionStop:
		s.terminated(c)
		return nil
	case ActionEscalate:
		return s.escalate(fmt.Errorf("supervisor %s: child %q (%s): %w", s.id, c.spec.ID, reason, ErrEscalated))
	}
	if !s.addRestart() {
		return s.escalate(fmt.Errorf("supervisor %s: %w: more than %d restarts within %s; last child %q: %s",
			s.id, ErrIntensity, s.spec.MaxRestarts, s.spec.RestartWindow, c.spec.ID, reason))
	}
	var set []*child
	switch {
	case c.spec.OnFailure == ActionResume || s.spec.Strategy == OneForOne:
		set = []*child{c}
	case s.spec.Strategy == AllForOne:
		set = slices.Clone(s.children)
	case s.spec.Strategy == RestForOne:
		set = slices.Clone(s.children[slices.Index(s.children, c):])
	}
	return s.restartSet(c, set)
}

// terminated settles a child that stopped for good: a static supervisor
// keeps its spec; a dynamic one forgets it, as Elixir's DynamicSupervisor
// does, so its ID is free again.
func (s *Supervisor) terminated(c *child) {
	if s.kind == KindDynamic {
		s.remove(c)
	} else {
		s.set(c, StatusTerminated)
	}
}

// addRestart records a restart and reports whether it is within the
// intensity: at most MaxRestarts restarts inside RestartWindow.
func (s *Supervisor) addRestart() bool {
	now := time.Now()
	keep := s.restarts[:0]
	for _, t := range s.restarts {
		if now.Sub(t) < s.spec.RestartWindow {
			keep = append(keep, t)
		}
	}
	s.restarts = append(keep, now)
	return len(s.restarts) <= s.spec.MaxRestarts
}

// restartSet stops the bystanders of set in reverse order (dropping the
// temporary ones), then starts set in order.
func (s *Supervisor) restartSet(failed *child, set []*child) error {
	for _, c := range set {
		s.set(c, StatusRestarting)
	}
	for i := len(set) - 1; i >= 0; i-- {
		if c := set[i]; c != failed {
			s.stopChild(c)
			s.set(c, StatusRestarting)
		}
	}
	live := set[:0]
	for _, c := range set {
		if c != failed && c.spec.Restart == Temporary {
			s.remove(c)
			continue
		}
		live = append(live, c)
	}
	s.startInOrder(live)
	return nil
}

// startInOrder starts cs in order; the first that fails to start and those
// after it stay restarting and are retried on the loop's next turn (each
// retry counts toward the intensity, as OTP's try_again does).
func (s *Supervisor) startInOrder(cs []*child) {
	for _, c := range cs {
		c.restarts++ // shown by spawnChild's publication
		if err := s.spawnChild(c); err != nil {
			c.restarts--
			s.log.Error("child restart failed", "child", c.spec.ID, "error", err)
			s.retry = true
			return
		}
		s.met.restarts.WithLabelValues(string(s.id), c.spec.ID).Inc()
	}
}

func (s *Supervisor) pendingRestarts() bool { return s.retry }

func (s *Supervisor) retryRestarts() error {
	s.retry = false
	var cs []*child
	for _, c := range s.children {
		if c.status == StatusRestarting && c.pid.IsZero() {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil // terminated or removed meanwhile
	}
	if !s.addRestart() {
		return s.escalate(fmt.Errorf("supervisor %s: %w: more than %d restarts within %s; child %q could not be restarted",
			s.id, ErrIntensity, s.spec.MaxRestarts, s.spec.RestartWindow, cs[0].spec.ID))
	}
	s.startInOrder(cs)
	return nil
}

// escalate stops every child in reverse order and returns err, which the
// loop turns into the supervisor's abnormal exit.
func (s *Supervisor) escalate(err error) error {
	s.met.escalations.WithLabelValues(string(s.id)).Inc()
	s.log.Error("supervisor escalates", "error", err)
	s.publishStatus(StatusStopping)
	s.stopAll()
	return err
}
