package pgscope

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Scope is a running pg.scope: an isolated namespace of process groups.
// Other packages reach it with registry.Find[*Scope](env, "pg scope", id,
// KindName).
//
// Mutations (Join, Leave, Monitor, Events, and the member snapshot of a
// broadcast) are commands run in order by the scope's loop; the reads
// (GetMembers, GetLocalMembers, WhichGroups, WhichLocalGroups) load the
// index the loop last published and never wait on it.
type Scope struct {
	id   registry.ID
	what string // "pg scope <id>", for errors
	node *process.Node
	log  *slog.Logger
	env  *registry.Env
	spec atomic.Pointer[Spec]

	loop   *process.Loop
	cancel context.CancelFunc
	pid    process.PID

	root    atomic.Pointer[hnode]
	ngroups atomic.Int64 // groups in root, to size WhichGroups
	st      state        // owned by the loop; by halt once the loop has stopped

	m           *scopeMetrics
	healthName  string
	lastTraffic atomic.Int64               // unix nanoseconds of the last broadcast traffic
	peers       atomic.Int64               // remote peers heard from and not down; see state.heard
	events      atomic.Uint64              // membership events raised, whether or not anyone listens
	dist        atomic.Pointer[peeringBox] // the cluster's part; nil on one node

	stopped  atomic.Bool
	haltOnce sync.Once

	// heardOps counts the peers' operations applied (state.heard), and
	// heardSeen is its value at the health check before: the check
	// stamps lastTraffic when it moved, so the loop reads no clock per
	// remote operation. Last, so the fields above keep their places.
	heardOps, heardSeen atomic.Uint64
}

var (
	_ registry.Instance = (*Scope)(nil)
	_ registry.Stopper  = (*Scope)(nil)
	_ registry.Updater  = (*Scope)(nil)
	_ registry.Viewer   = (*Scope)(nil)
)

// Start implements registry.Starter.
func (k Kind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, so registry.StartOptions) (registry.Instance, error) {
	spec, ok := e.Spec.(*Spec)
	if !ok || spec == nil {
		return nil, fmt.Errorf("pg scope %s: spec is %T, not *pgscope.Spec", e.ID, e.Spec)
	}
	opts := Options{Distributor: k.Distributor, MonitorBy: so.MonitorBy}
	if opts.Distributor == nil {
		// The node's pg distribution, when it is in a cluster (package
		// node hands it to the runtime for every kind's Env).
		opts.Distributor, _ = env.Cluster.(Distributor)
	}
	s, err := NewWithOptions(env, e.ID, *spec, opts)
	if err != nil {
		return nil, err
	}
	// The entry's process is registered under its ID, as every entry's
	// is (OTP's pg registers its scope by name), on one node too; in a
	// cluster the distribution already did (peers address it by name).
	if err := env.Node.Register(string(e.ID), s.pid); err != nil {
		if !so.MonitorBy.IsZero() {
			env.Node.Demonitor(so.MonitorBy, s.pid) // the error tells of it
		}
		_ = s.Stop(context.Background())
		return nil, fmt.Errorf("pg scope %s: %w", e.ID, err)
	}
	// What starts after the scope (its users, a runner's --main) finds
	// the members of the nodes already in the cluster.
	s.waitInitialSync(ctx)
	return s, nil
}

// Options configure a scope beyond its entry's fields. The zero value is a
// scope of this node alone.
type Options struct {
	// Distributor, when set, keeps the scope in step with the scopes of
	// the same entry on other nodes (the cluster layer's).
	Distributor Distributor
	// MonitorBy monitors the scope's process from its spawn (see
	// registry.StartOptions); zero: nobody does.
	MonitorBy process.PID
}

// New starts a scope outside the registry (for Go embedders and tests).
// env needs a Node; Logger, Metrics, Health and Entries may be nil. The
// scopes of one entry share their series and health check through
// env.Metrics: without it, a scope that stops after a newer one of the
// same entry started also removes that one's health check.
func New(env *registry.Env, id registry.ID, spec Spec) (*Scope, error) {
	return NewWithOptions(env, id, spec, Options{})
}

// NewWithOptions is New with options: a Distributor makes the scope part
// of a cluster.
func NewWithOptions(env *registry.Env, id registry.ID, spec Spec, opts Options) (*Scope, error) {
	if env == nil || env.Node == nil {
		return nil, fmt.Errorf("pg scope %s: env has no node", id)
	}
	s := &Scope{id: id, what: "pg scope " + string(id), node: env.Node, env: env}
	if env.Logger != nil {
		s.log = env.EntryLogger(id)
	} else {
		s.log = slog.Default().With("entry", string(id))
	}
	sp := spec
	s.spec.Store(&sp)
	s.m = newScopeMetrics(env.Metrics, string(id))
	s.st = newState(s)
	s.loop = process.NewLoop(process.LoopOptions{
		MaxQueue:  spec.ActionQueueMaxSize,
		WarnQueue: spec.ActionQueueSize,
		OnWarn:    s.warnQueue,
	})
	// The scope's process runs its loop: one goroutine owns the state,
	// takes the commands, and handles the process's mail (other nodes'
	// scopes) and events (members' exits) between them. The scope stands
	// or falls with the process: however it ends (terminate, kill, a
	// link), the scope halts as the loop returns. halt cancels ctx, the
	// parent of the process's context, to end a loop that the process's
	// own end did not.
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	// Claimed before anything can halt the scope, so halt always finds
	// what it must release.
	s.m.vecs.claim(s)
	s.lastTraffic.Store(time.Now().UnixNano())
	if env.Health != nil {
		s.healthName = "pg.broadcast_recent." + string(id)
		env.Health.SetCheck(s.healthName, s.checkBroadcastRecent)
	}
	started := make(chan struct{})
	pid, err := env.Node.SpawnFunc(func(h *process.Proc) (any, error) {
		defer s.halt()
		<-started // s.pid is set: closed as SpawnFunc returns
		s.loop.RunProc(h, scopeProc{s})
		return nil, nil
	}, process.SpawnOptions{System: true, Context: ctx, MonitorBy: opts.MonitorBy})
	if err != nil {
		s.halt()
		return nil, fmt.Errorf("pg scope %s: spawn scope process: %w", id, err)
	}
	s.pid = pid
	close(started)
	if opts.Distributor != nil {
		if err := s.distribute(opts.Distributor); err != nil {
			_ = s.Stop(context.Background())
			return nil, err
		}
	}
	s.log.Debug("pg scope started", "pid", pid.String(), "distributed", s.peering() != nil)
	return s, nil
}

// ID returns the scope's entry ID.
func (s *Scope) ID() registry.ID { return s.id }

// PID returns the scope's own process; its exit means the scope stopped.
func (s *Scope) PID() process.PID { return s.pid }

// Spec returns the configuration in force.
func (s *Scope) Spec() Spec { return *s.spec.Load() }

// Stopped reports whether the scope has stopped (a handle to a stopped
// scope should look the entry up again: it may have been restarted).
func (s *Scope) Stopped() bool { return s.stopped.Load() }

// Stop implements registry.Stopper: the loop stops (queued commands fail
// with ErrStopped), every subscription's channel is closed, and the scope
// process exits.
func (s *Scope) Stop(ctx context.Context) error {
	// New operations fail from now on; the process halts the scope as it
	// ends (its loop returns first, failing what is queued).
	s.stopped.Store(true)
	_, err := s.node.Stop(ctx, s.pid)
	s.halt()
	if err != nil && !errors.Is(err, process.ErrNoProcess) {
		return fmt.Errorf("pg scope %s: stop: %w", s.id, err)
	}
	return nil
}

// halt stops the loop and releases what the scope holds. The scope's
// process calls it as its loop returns; anyone else waits for the loop to
// return first (which it does once ctx is cancelled).
func (s *Scope) halt() {
	s.haltOnce.Do(func() {
		s.stopped.Store(true)
		s.cancel()
		if s.pid.IsZero() {
			// The process never ran (a failed spawn), nor did the loop:
			// run it over a done context, which ends it.
			done, cancel := context.WithCancel(context.Background())
			cancel()
			s.loop.Run(done)
		}
		<-s.loop.Done()
		// The loop is gone: this goroutine owns the state now.
		s.st.closeAll()
		if p := s.peering(); p != nil {
			p.Stop()
		}
		s.root.Store(nil)
		s.ngroups.Store(0)
		// A newer scope of the same entry (a restart that overlapped this
		// stop) owns the shared gauges and the health check by now.
		if s.m.vecs.release(s) {
			s.m.reset()
			if s.healthName != "" {
				s.env.Health.RemoveCheck(s.healthName)
			}
		}
		s.log.Debug("pg scope stopped")
	})
}

// Update implements registry.Updater: every field applies in place.
// Timeouts and limits hold from the next operation; monitor_buffer sizes
// subscriptions opened from now on. Lowered limits refuse new joins but
// never evict members.
func (s *Scope) Update(_ context.Context, e *registry.Entry) (bool, error) {
	spec, ok := e.Spec.(*Spec)
	if !ok || spec == nil {
		return false, fmt.Errorf("pg scope %s: spec is %T, not *pgscope.Spec", s.id, e.Spec)
	}
	sp := *spec
	s.spec.Store(&sp)
	s.loop.SetLimits(sp.ActionQueueMaxSize, sp.ActionQueueSize)
	s.log.Info("pg scope updated in place")
	return true, nil
}

func (s *Scope) warnQueue(depth int) {
	sp := s.spec.Load()
	s.log.Warn("pg scope action queue is nearing capacity",
		"depth", depth, "action_queue_size", sp.ActionQueueSize, "action_queue_max_size", sp.ActionQueueMaxSize)
}

// urgentDo runs fn on the loop as soon as possible, past the queue limit:
// work that must never be refused (a member's EXIT, a closed subscription).
func (s *Scope) urgentDo(fn func()) {
	if s.stopped.Load() {
		return
	}
	_ = s.loop.SubmitUrgent(func() {
		defer s.recoverLoop(nil)
		fn()
	})
}

// recoverLoop turns a panic in a loop command (a bug) into the failure of
// the scope: the caller gets an internal error, the scope's process exits
// abnormally (the root supervisor restarts the entry) and the rest of the
// runtime carries on.
func (s *Scope) recoverLoop(errp *error) {
	r := recover()
	if r == nil {
		return
	}
	err := value.NewError(value.KindInternal, "pg scope %s: loop panicked: %v", s.id, r)
	s.log.Error("pg scope loop panicked", "panic", r, "stack", string(debug.Stack()))
	if errp != nil {
		*errp = err
	}
	_ = s.node.Exit(s.pid, err)
}

// command is one loop command, run through process.RunOn. Joins and leaves
// carry their arguments in it (groups copied into a reused buffer: the
// command may run after its caller gave up and reused its slice) instead
// of a closure, and commands are pooled, so the hot path allocates nothing
// of its own.
type command struct {
	s      *Scope
	op     commandOp
	pid    process.PID
	groups []string
	fn     func() error
}

type commandOp uint8

const (
	opFunc commandOp = iota
	opJoin
	opLeave
)

var commands = sync.Pool{New: func() any { return new(command) }}

// Run implements process.Command, on the loop. The command goes back to
// its pool once run: RunOn never touches it after Run returns.
func (c *command) Run() (err error) {
	s := c.s
	if s.stopped.Load() {
		// Stop sets the flag before the loop's context ends, so the loop
		// may still reach what was queued: it fails as the stopped loop
		// would have failed it, and changes nothing.
		c.release()
		return fmt.Errorf("%s: %w", s.what, ErrStopped)
	}
	defer s.recoverLoop(&err)
	switch c.op {
	case opJoin:
		// One batch: a join of many groups publishes the new ones in one
		// version of the index (see state.beginBatch).
		s.st.beginBatch()
		err = s.st.join(c.pid, c.groups)
		s.st.endBatch()
	case opLeave:
		err = s.st.leave(c.pid, c.groups)
	default:
		err = c.fn()
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", s.what, err)
	}
	s.m.queue.Set(float64(s.loop.Len()))
	c.release()
	return err
}

func (c *command) release() {
	c.s, c.fn = nil, nil
	clear(c.groups)
	if cap(c.groups) > 64 {
		c.groups = nil
	}
	c.groups = c.groups[:0]
	commands.Put(c)
}

// do runs fn on the loop and waits for its result, at most
// protocol_timeout. A full queue is refused at once with a limit error.
func (s *Scope) do(op string, fn func() error) error {
	return s.doCtx(context.Background(), op, fn)
}

// doCtx is do for a caller that stops waiting when ctx is done.
func (s *Scope) doCtx(ctx context.Context, op string, fn func() error) error {
	c := commands.Get().(*command)
	c.op, c.fn = opFunc, fn
	return s.call(ctx, op, c)
}

// doOp runs a join or leave of pid on the loop; see do.
func (s *Scope) doOp(ctx context.Context, op commandOp, pid process.PID, groups []string) error {
	c := commands.Get().(*command)
	c.op, c.pid = op, pid
	c.groups = append(c.groups, groups...)
	name := "join"
	if op == opLeave {
		name = "leave"
	}
	if err := s.call(ctx, name, c); err != nil {
		return err
	}
	// Its events are in every subscriber's buffer when it returns.
	return s.awaitDelivery(ctx, name, groups)
}

// call runs c on the loop and turns what went wrong into the scope's
// errors: stopped, a full queue (counted), protocol_timeout, or a caller
// that stopped waiting. A command that did not run is not put back in the
// pool: it may yet run (after a timeout), and one that never will is only
// garbage.
func (s *Scope) call(ctx context.Context, op string, c *command) error {
	if s.stopped.Load() {
		c.release()
		return fmt.Errorf("pg scope %s: %s: %w", s.id, op, ErrStopped)
	}
	c.s = s
	// A caller that stops waiting (a terminated process) gets
	// ErrCallerGone; the command may still run, as after a timeout.
	err := process.RunOnAs(ctx, s.loop, c, process.CallOptions{Timeout: s.spec.Load().ProtocolTimeout},
		process.CallErrors{What: s.what, Op: op, Stopped: ErrStopped, Timeout: ErrTimeout, Abandoned: ErrCallerGone})
	if errors.Is(err, process.ErrQueueFull) {
		s.m.refused.Inc()
		return fmt.Errorf("%w (action_queue_max_size %d)", err, s.spec.Load().ActionQueueMaxSize)
	}
	return err
}

func (s *Scope) checkGroups(groups []string) error {
	if len(groups) == 0 {
		return fmt.Errorf("pg scope %s: %w: no group named", s.id, ErrInvalidGroup)
	}
	for _, g := range groups {
		if err := s.checkGroup("", g); err != nil {
			return err
		}
	}
	return nil
}

// checkGroup refuses an empty group name, and one longer than
// process.MaxNameSize (a limit error): a group's name is kept in the
// state, in every event and in the views, so it is a label, as a
// registered name is. op, when not "", names the operation.
func (s *Scope) checkGroup(op, g string) error {
	if g != "" && len(g) <= process.MaxNameSize {
		return nil
	}
	at := "pg scope " + string(s.id)
	if op != "" {
		at += ": " + op
	}
	if g == "" {
		return fmt.Errorf("%s: %w: empty name", at, ErrInvalidGroup)
	}
	return process.CheckName(at+": group", g)
}

func (s *Scope) checkLocal(pid process.PID) error {
	if pid.IsZero() || !s.node.IsLocal(pid) {
		return fmt.Errorf("pg scope %s: %s: %w", s.id, pid, ErrNotLocal)
	}
	return nil
}

// Join adds pid to each of groups, once per naming: a process may join a
// group many times and must leave it as many times. pid must be a local
// process; it is removed from every group when it exits. The whole batch
// is refused with a limit error (ErrTooManyGroups, ErrGroupFull, or a full
// queue) when any part of it would pass a limit.
func (s *Scope) Join(pid process.PID, groups ...string) error {
	return s.JoinContext(context.Background(), pid, groups...)
}

// JoinContext is Join for a caller that stops waiting when ctx is done (a
// process being terminated): it then gets ErrCallerGone at once, and the
// join may still be applied, as after a timeout.
func (s *Scope) JoinContext(ctx context.Context, pid process.PID, groups ...string) error {
	if err := s.checkGroups(groups); err != nil {
		return err
	}
	if err := s.checkLocal(pid); err != nil {
		return err
	}
	return s.doOp(ctx, opJoin, pid, groups)
}

// Leave removes one membership of pid per naming of each group, as far as
// it has them. It fails with ErrNotJoined when pid is in none of them.
func (s *Scope) Leave(pid process.PID, groups ...string) error {
	return s.LeaveContext(context.Background(), pid, groups...)
}

// LeaveContext is Leave for a caller that stops waiting when ctx is done;
// see JoinContext.
func (s *Scope) LeaveContext(ctx context.Context, pid process.PID, groups ...string) error {
	if err := s.checkGroups(groups); err != nil {
		return err
	}
	if err := s.checkLocal(pid); err != nil {
		return err
	}
	return s.doOp(ctx, opLeave, pid, groups)
}

// GetMembers returns every member of group on every node, a process
// repeated once per join; an empty or unknown group gives nil. It reads the
// published index: no lock, no wait on the loop, no copy and no
// allocation. The slice is the group's current version, shared by every
// reader and never changed by the scope: read it, never modify it
// (slices.Clone gives a copy to sort or edit; its capacity is its length,
// so an append copies it).
func (s *Scope) GetMembers(group string) []process.PID {
	v := s.root.Load().get(hashGroup(group), group).view()
	if v == nil {
		return nil
	}
	return v.members()
}

// GetLocalMembers is GetMembers restricted to processes of this node.
func (s *Scope) GetLocalMembers(group string) []process.PID {
	v := s.root.Load().get(hashGroup(group), group).view()
	if v == nil || v.nlocal == 0 {
		return nil
	}
	return v.localMembers()
}

// DistinctMembers returns each member process of group once (in order of
// first appearance), as broadcast reaches them: what a router choosing one
// member wants. The distinct list is computed once per version of the
// group and copied out, so repeated calls cost one allocation.
func (s *Scope) DistinctMembers(group string) []process.PID {
	v := s.root.Load().get(hashGroup(group), group).view()
	if v == nil {
		return nil
	}
	return clonePIDs(v.distinct(false))
}

// SharedDistinctMembers is DistinctMembers without the copy: the scope's
// cached list for the current version of group, shared by every caller and
// never modified, so a caller must not modify it either. A router that
// picks a member per message reads it without allocating.
func (s *Scope) SharedDistinctMembers(group string) []process.PID {
	v := s.root.Load().get(hashGroup(group), group).view()
	if v == nil {
		return nil
	}
	return v.distinct(false)
}

// DistinctLocalMembers is DistinctMembers restricted to this node.
func (s *Scope) DistinctLocalMembers(group string) []process.PID {
	v := s.root.Load().get(hashGroup(group), group).view()
	if v == nil || v.nlocal == 0 {
		return nil
	}
	return clonePIDs(v.distinct(true))
}

// WhichGroups returns every group with a member on any node, sorted.
func (s *Scope) WhichGroups() []string {
	out := make([]string, 0, s.ngroups.Load())
	s.root.Load().eachGroup(func(name string, _ *groupView) { out = append(out, name) })
	sort.Strings(out)
	return out
}

// WhichLocalGroups returns every group with a member on this node, sorted.
func (s *Scope) WhichLocalGroups() []string {
	var out []string
	s.root.Load().eachGroup(func(name string, v *groupView) {
		if v.nlocal > 0 {
			out = append(out, name)
		}
	})
	sort.Strings(out)
	return out
}

func (s *Scope) newSub(opts SubscribeOptions, group string, all bool) (*Subscription, error) {
	if !opts.Owner.IsZero() {
		if err := s.checkLocal(opts.Owner); err != nil {
			return nil, err
		}
	}
	sub := &Subscription{scope: s, owner: opts.Owner, group: group, all: all, sink: opts.Sink}
	if opts.Sink == nil {
		sub.ch = make(chan Event, s.spec.Load().MonitorBuffer)
	}
	return sub, nil
}

func (o SubscribeOptions) ctx() context.Context {
	if o.Context == nil {
		return context.Background()
	}
	return o.Context
}

// Monitor subscribes owner to the joins and leaves of group and returns the
// group's members at that moment; both are taken in one loop command, so
// no change is missed or seen twice. owner is a local process whose exit
// ends the subscription, or the zero PID for Go code that closes it itself.
func (s *Scope) Monitor(owner process.PID, group string) (*Subscription, []process.PID, error) {
	return s.Subscribe(group, SubscribeOptions{Owner: owner})
}

// Subscribe is Monitor with options (a Sink in place of the channel).
func (s *Scope) Subscribe(group string, opts SubscribeOptions) (*Subscription, []process.PID, error) {
	if err := s.checkGroup("monitor", group); err != nil {
		return nil, nil, err
	}
	sub, err := s.newSub(opts, group, false)
	if err != nil {
		return nil, nil, err
	}
	var members []process.PID
	err = s.doCtx(opts.ctx(), "monitor", func() error {
		if err := s.st.subscribe(sub); err != nil {
			return err
		}
		members = s.st.membersOf(group)
		return nil
	})
	if err != nil {
		// When the wait timed out the command may still run: a closed
		// subscription is never registered, and one the loop registered
		// just after the caller gave up is removed again by Close.
		sub.Close(false)
		return nil, nil, err
	}
	return sub, members, nil
}

// Events subscribes owner to the changes of every group and returns the
// whole scope (group to members) as of the same loop command.
func (s *Scope) Events(owner process.PID) (*Subscription, map[string][]process.PID, error) {
	return s.SubscribeAll(SubscribeOptions{Owner: owner})
}

// SubscribeAll is Events with options (a Sink in place of the channel).
func (s *Scope) SubscribeAll(opts SubscribeOptions) (*Subscription, map[string][]process.PID, error) {
	sub, err := s.newSub(opts, "", true)
	if err != nil {
		return nil, nil, err
	}
	var snap map[string][]process.PID
	err = s.doCtx(opts.ctx(), "events", func() error {
		if err := s.st.subscribe(sub); err != nil {
			return err
		}
		snap = s.st.snapshotAll()
		return nil
	})
	if err != nil {
		sub.Close(false) // see Subscribe
		return nil, nil, err
	}
	return sub, snap, nil
}

// scopeProc is what the scope's process does besides the loop's commands:
// its PID stands for the entry, it watches member and subscriber
// processes, and it is where other nodes' scopes send. It runs on the loop
// (process.Loop.RunProc): what it handles touches the state directly.
type scopeProc struct{ s *Scope }

var _ process.LoopProcess = scopeProc{}

func (p scopeProc) Receive(m process.Message) {
	// What other nodes' scopes send; a scope of this node alone expects
	// nothing.
	if d := p.s.peering(); d != nil && strings.HasPrefix(m.Topic, "pg.") {
		defer p.s.recoverLoop(nil)
		d.Receive(m)
		return
	}
	p.s.log.Debug("pg scope process ignored a message", "topic", m.Topic, "from", m.From.String())
	if m.CanReply() {
		// Reachable by name, it says so rather than let an ask time out.
		_, _ = m.Reply(p.s.pid, nil, fmt.Errorf("pg scope %s: %w", p.s.id, ErrNoMessages))
	}
}

func (p scopeProc) ReceiveEvent(e process.Event) {
	if e.Kind != process.EventExit {
		return
	}
	s, pid := p.s, e.From
	defer s.recoverLoop(nil)
	if !s.node.IsLocal(pid) {
		// Members are local: a remote process the scope watches is a
		// peer's scope.
		if d := s.peering(); d != nil {
			d.Down(pid, e.Exit.Err)
		}
		return
	}
	s.st.processDown(pid)
}

// Flush hands the round's local changes to the cluster's part, which
// sends them together.
func (p scopeProc) Flush() {
	if d := p.s.peering(); d != nil {
		defer p.s.recoverLoop(nil)
		d.Flush()
	}
}
