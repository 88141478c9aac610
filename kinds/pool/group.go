package pool

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/internal/problems"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// GroupKindName is the kind field of a group router entry.
const GroupKindName = "router.group"

var groupStrategies = []string{
	string(RoundRobin), string(Random), string(Broadcast), string(ConsistentHash), string(ScatterGather),
}

// GroupSpec is a decoded router.group entry: route to the current members
// of a pg group, on any node.
type GroupSpec struct {
	Scope    registry.ID
	Group    string
	Strategy Strategy
	Timeout  time.Duration

	checked bool // Decode validated it; see check
}

// GroupKind is the router.group kind. The zero value is ready to register.
type GroupKind struct{}

var (
	_ registry.Kind    = GroupKind{}
	_ registry.Starter = GroupKind{}
	_ registry.Stopper = (*Group)(nil)
	_ registry.Updater = (*Group)(nil)
	_ registry.Viewer  = (*Group)(nil)
)

// Name implements registry.Kind.
func (GroupKind) Name() string { return GroupKindName }

// The fields of a group router.
var (
	fGroupScope = registry.RefField("scope", registry.RefRunning, []string{pgscope.KindName},
		"The pg.scope entry whose group this router routes to (started first).").
		Require("required: the pg.scope entry whose group this router routes to")
	fGroup = registry.StringField("group", "", "The pg group whose members, on any node, are the routees.").
		Require("required: the pg group whose members are the routees")
	fGroupStrategy = registry.EnumField("strategy", string(RoundRobin), groupStrategies, "How a message picks its member(s).")
	fGroupTimeout  = registry.DurationField("timeout", DefaultTimeout, "The deadline of scatter_gather_first_completed.").
			Positive().Below("must be a positive, finite duration, got %s")

	groupFields = []*registry.Field{fGroupScope, fGroup, fGroupStrategy, fGroupTimeout}
)

var _ registry.Declared = GroupKind{}

// Fields implements registry.Declared.
func (GroupKind) Fields() []*registry.Field { return groupFields }

// Decode implements registry.Kind: it returns a *GroupSpec, validated
// (its problems reported at their fields).
func (GroupKind) Decode(d *registry.Decoder) any {
	s := &GroupSpec{
		Scope:    fGroupScope.Ref(d),
		Group:    fGroup.Str(d),
		Strategy: Strategy(fGroupStrategy.EnumValue(d)),
		Timeout:  fGroupTimeout.Duration(d),
	}
	s.validate(problems.To(d))
	s.checked = true
	return s
}

// Start implements registry.Starter.
func (GroupKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	spec, ok := e.Spec.(*GroupSpec)
	if !ok {
		return nil, value.NewError(value.KindInvalid, "group %s: spec is a %T, not a *pool.GroupSpec", e.ID, e.Spec)
	}
	return StartGroup(ctx, env, e.ID, spec, opts)
}

// validate is the one set of rules of a group router's values, for a
// decoded GroupSpec and one built in Go alike.
func (s *GroupSpec) validate(p *problems.List) {
	if s.Scope == "" {
		p.Errorf(fGroupScope.Name, "required")
	}
	if s.Group == "" {
		p.Errorf(fGroup.Name, "required")
	}
	p.Check(fGroupStrategy, string(s.Strategy))
	p.Check(fGroupTimeout, s.Timeout)
}

// check returns what is wrong with a GroupSpec built in Go (Decode
// validated a decoded one already).
func (s *GroupSpec) check() error {
	if s.checked {
		return nil
	}
	l := problems.New(nil)
	s.validate(l)
	return l.Err()
}

// Group is a running router.group. It owns no routees and keeps no state
// but caches, so it has no loop: every message is routed on the sender's
// goroutine against the scope's published membership snapshot.
type Group struct {
	core
	env    *registry.Env
	spec   atomic.Pointer[GroupSpec]
	scope  atomic.Pointer[pgscope.Scope]
	hashed atomic.Pointer[memberRing]
	ready  chan struct{}
}

// memberRing caches the consistent-hash ring of one membership: the
// scope's shared distinct list of one version of the group.
type memberRing struct {
	pids []process.PID
	ring *ring
}

type groupBehavior struct{ g *Group }

func (b groupBehavior) Init(c process.Context) error {
	b.g.pid = c.Self()
	close(b.g.ready)
	return nil
}

func (b groupBehavior) Receive(_ process.Context, m process.Message) {
	if err := b.g.Route(m); err != nil {
		b.g.notRouted(m, err)
	}
}

func (b groupBehavior) Terminate(process.Context, process.Exit) {
	b.g.stopping.Store(true)
	b.g.failOpen()
}

// StartGroup runs a group router; the scope must be running.
func StartGroup(ctx context.Context, env *registry.Env, id registry.ID, spec *GroupSpec, opts registry.StartOptions) (*Group, error) {
	if err := spec.check(); err != nil {
		return nil, value.NewError(value.KindInvalid, "group %s: %v", id, err)
	}
	met := newMetrics(env.Metrics)
	g := &Group{
		core: core{
			what: "group", id: id, node: env.Node, log: env.EntryLogger(id), met: met,
			routed: met.routed.WithLabelValues(string(id), string(spec.Strategy)),
		},
		env: env, ready: make(chan struct{}),
	}
	g.spec.Store(spec)
	s, err := findScope(env, spec.Scope)
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", id, err)
	}
	g.scope.Store(s)
	pid, err := env.Node.Spawn(groupBehavior{g}, process.SpawnOptions{System: true, Name: string(id), MonitorBy: opts.MonitorBy})
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", id, err)
	}
	select {
	case <-g.ready:
		return g, nil
	case <-ctx.Done():
		if !opts.MonitorBy.IsZero() {
			env.Node.Demonitor(opts.MonitorBy, pid) // the error tells of it
		}
		_ = env.Node.Kill(pid)
		return nil, fmt.Errorf("group %s: start: %w", id, ctx.Err())
	}
}

// findScope returns the running scope of entry id.
func findScope(env *registry.Env, id registry.ID) (*pgscope.Scope, error) {
	return registry.Find[*pgscope.Scope](env, "pg scope", string(id), pgscope.KindName)
}

// members returns the group's distinct members (the scope's shared list:
// read only), looking the scope up again when it was restarted.
func (g *Group) members(sp *GroupSpec) ([]process.PID, error) {
	s := g.scope.Load()
	if s == nil || s.Stopped() {
		ns, err := findScope(g.env, sp.Scope)
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", g.id, err)
		}
		g.scope.Store(ns)
		s = ns
	}
	return s.SharedDistinctMembers(sp.Group), nil
}

// Route routes m to the group's current members by the strategy.
func (g *Group) Route(m process.Message) error {
	if g.stopping.Load() {
		return fmt.Errorf("group %s: %w", g.id, ErrStopped)
	}
	sp := g.spec.Load()
	pids, err := g.members(sp)
	if err != nil {
		return err
	}
	rs := routees{pids: pids}
	if sp.Strategy == ConsistentHash && len(pids) > 0 {
		rs.ring = g.ring(pids)
	}
	return g.route(sp.Strategy, rs, m, sp.Timeout, 0)
}

// ring returns the ring of this membership, rebuilt only when it changed:
// the scope's list is shared and immutable, so a new version of the group
// is a new list. Points come from member PIDs, so every node routes a key
// to the same member.
func (g *Group) ring(pids []process.PID) *ring {
	if c := g.hashed.Load(); c != nil && len(c.pids) == len(pids) && &c.pids[0] == &pids[0] {
		return c.ring
	}
	names := make([]string, len(pids))
	for i, p := range pids {
		names[i] = p.String()
	}
	r := newRing(names)
	g.hashed.Store(&memberRing{pids: pids, ring: r})
	return r
}

// Send routes m (see Route).
func (g *Group) Send(m process.Message) error { return g.Route(m) }

// Tell routes payload with topic Topic and no reply target.
func (g *Group) Tell(payload any) error {
	return g.Route(process.Message{Topic: Topic, Payload: payload})
}

// Ask routes payload as an ask and waits for the reply and its sender.
func (g *Group) Ask(payload any, timeout time.Duration) (any, process.PID, error) {
	return g.AskContext(context.Background(), process.Message{Topic: Topic, Payload: payload}, timeout)
}

// CallerTimeout follows the pool's rule (see Pool.CallerTimeout).
func (g *Group) CallerTimeout(t time.Duration) time.Duration {
	sp := g.spec.Load()
	return g.callerTimeout(t, sp.Strategy, sp.Timeout)
}

// AskContext routes m as an ask and waits for the reply, the timeout or ctx.
func (g *Group) AskContext(ctx context.Context, m process.Message, timeout time.Duration) (any, process.PID, error) {
	return g.ask(ctx, g.Route, m, g.CallerTimeout(timeout))
}

// Size returns the number of distinct members.
func (g *Group) Size() int {
	pids, err := g.members(g.spec.Load())
	if err != nil {
		return 0
	}
	return len(pids)
}

// Routees returns the distinct members' PIDs.
func (g *Group) Routees() []string {
	pids, _ := g.members(g.spec.Load())
	out := make([]string, len(pids))
	for i, p := range pids {
		out[i] = p.String()
	}
	return out
}

// Stop fails every open scatter and stops the group's process.
func (g *Group) Stop(ctx context.Context) error {
	g.stopping.Store(true)
	g.failOpen()
	if _, err := g.node.Stop(ctx, g.pid); err != nil && !errors.Is(err, process.ErrNoProcess) {
		return fmt.Errorf("group %s: stop: %w", g.id, err)
	}
	return nil
}

// Update applies a new group or timeout in place; another scope or
// strategy needs a restart.
func (g *Group) Update(_ context.Context, e *registry.Entry) (bool, error) {
	ns, ok := e.Spec.(*GroupSpec)
	if !ok {
		return false, value.NewError(value.KindInvalid, "group %s: spec is a %T, not a *pool.GroupSpec", e.ID, e.Spec)
	}
	if err := ns.check(); err != nil {
		return false, value.NewError(value.KindInvalid, "group %s: %v", g.id, err)
	}
	old := g.spec.Load()
	if ns.Scope != old.Scope || ns.Strategy != old.Strategy {
		return false, nil
	}
	g.spec.Store(ns)
	return true, nil
}

// GroupView is the JSON view of a group router.
type GroupView struct {
	ID       string   `json:"id"`
	Scope    string   `json:"scope"`
	Group    string   `json:"group"`
	Strategy string   `json:"strategy"`
	Timeout  string   `json:"timeout"`
	Members  []string `json:"members"`
	// Nodes counts the routees on each node: a group spans the cluster.
	Nodes        map[string]int `json:"nodes"`
	OpenScatters int64          `json:"open_scatters"`
}

// View implements registry.Viewer; it reads snapshots only.
func (g *Group) View() any {
	sp := g.spec.Load()
	pids, _ := g.members(sp)
	v := GroupView{
		ID: string(g.id), Scope: string(sp.Scope), Group: sp.Group, Strategy: string(sp.Strategy),
		Timeout: sp.Timeout.String(), Members: make([]string, len(pids)), Nodes: map[string]int{},
		OpenScatters: g.nOpen.Load(),
	}
	for i, p := range pids {
		v.Members[i] = p.String()
		v.Nodes[p.Node]++
	}
	return v
}
