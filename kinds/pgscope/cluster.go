package pgscope

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/proctor-run/proctor/process"
)

// Replica is the side of a scope that the cluster layer drives, so that
// every node's scope of one entry holds the same groups. The cluster layer
// depends on this interface; the scope knows nothing of the cluster.
//
// The protocol it serves, in OTP pg's manner: each node sends its own
// members (SubscribeLocal gives them, then every change to them, in
// order) to its peers; a peer applies them to that node's share of its
// state with ApplyJoin and ApplyLeave, replaces the share with a full sync
// (ApplySync) on discovery and anti-entropy, and empties it when the node
// goes down (ApplyNodeDown). Each share is diffed against what was known,
// so only real changes raise member.joined and member.left events.
//
// Remote members are not held to max_groups and max_members_per_group:
// their own node enforced its limits when they joined, and a mirror that
// refused part of them would diverge from it.
type Replica interface {
	// ApplyJoin records that pids of node joined group, once per naming.
	ApplyJoin(ctx context.Context, node, group string, pids []process.PID) error
	// ApplyLeave records that pids of node left each of groups, once per
	// naming; copies never known are ignored and raise no event.
	ApplyLeave(ctx context.Context, node string, pids []process.PID, groups []string) error
	// ApplyOps applies several joins and leaves of node in order, in one
	// loop command (a peer's batch of changes).
	ApplyOps(ctx context.Context, node string, ops []Op) error
	// ApplySync replaces everything known of node's members by groups
	// (group to members, a member repeated once per join).
	ApplySync(ctx context.Context, node string, groups map[string][]process.PID) error
	// ApplyNodeDown removes every member of node, with member.left events.
	ApplyNodeDown(ctx context.Context, node string) error
	// LocalMembers returns this node's members by group, from the
	// published index: what a full sync to a peer carries.
	LocalMembers() map[string][]process.PID
	// SubscribeLocal subscribes to the changes of this node's members and
	// returns them as of the same moment.
	SubscribeLocal(opts SubscribeOptions) (*Subscription, map[string][]process.PID, error)
}

var _ Replica = (*Scope)(nil)

// checkNode refuses a share that is not another node's, or PIDs that are
// not node's own: a peer speaks only for itself.
func (s *Scope) checkNode(op, node string, pids []process.PID) error {
	if node == "" || node == s.node.Name() {
		return fmt.Errorf("pg scope %s: %s: %w: %q is not a remote node", s.id, op, ErrNotRemote, node)
	}
	for _, p := range pids {
		if p.Node != node || p.IsZero() {
			return fmt.Errorf("pg scope %s: %s: %w: %s is not a process of node %q", s.id, op, ErrNotRemote, p, node)
		}
	}
	return nil
}

// ApplyJoin implements Replica.
func (s *Scope) ApplyJoin(ctx context.Context, node, group string, pids []process.PID) error {
	if err := s.checkGroups([]string{group}); err != nil {
		return err
	}
	if err := s.checkNode("remote join", node, pids); err != nil {
		return err
	}
	pids = slices.Clone(pids)
	return s.doCtx(ctx, "remote join", func() error {
		s.st.remoteJoin(node, group, pids)
		return nil
	})
}

// ApplyLeave implements Replica.
func (s *Scope) ApplyLeave(ctx context.Context, node string, pids []process.PID, groups []string) error {
	if err := s.checkGroups(groups); err != nil {
		return err
	}
	if err := s.checkNode("remote leave", node, pids); err != nil {
		return err
	}
	pids, groups = slices.Clone(pids), slices.Clone(groups)
	return s.doCtx(ctx, "remote leave", func() error {
		s.st.remoteLeave(node, pids, groups)
		return nil
	})
}

// Op is one change of a remote node's members, for ApplyOps: PIDs joined
// Group, or left it (Leave).
type Op struct {
	Leave bool
	Group string
	PIDs  []process.PID
}

// ApplyOps implements Replica. Nothing is applied when an op is invalid.
func (s *Scope) ApplyOps(ctx context.Context, node string, ops []Op) error {
	own := make([]Op, len(ops))
	for i, o := range ops {
		own[i] = Op{Leave: o.Leave, Group: o.Group, PIDs: slices.Clone(o.PIDs)}
	}
	if err := s.OnLoop().check(node, own); err != nil {
		return err
	}
	return s.doCtx(ctx, "remote ops", func() error { return s.OnLoop().ApplyOps(node, own) })
}

// ApplySync implements Replica.
func (s *Scope) ApplySync(ctx context.Context, node string, groups map[string][]process.PID) error {
	own := make(map[string][]process.PID, len(groups))
	for g, pids := range groups {
		if err := s.checkGroups([]string{g}); err != nil {
			return err
		}
		if err := s.checkNode("remote sync", node, pids); err != nil {
			return err
		}
		own[g] = slices.Clone(pids)
	}
	return s.doCtx(ctx, "remote sync", func() error { return s.OnLoop().ApplySync(node, own) })
}

// ApplyNodeDown implements Replica.
func (s *Scope) ApplyNodeDown(ctx context.Context, node string) error {
	if err := s.checkNode("node down", node, nil); err != nil {
		return err
	}
	return s.doCtx(ctx, "node down", func() error {
		s.st.nodeDown(node)
		return nil
	})
}

// LocalMembers implements Replica. It never waits on the loop: each group
// is one version of it, but groups that change meanwhile may be seen before
// or after their change (on the loop, as SubscribeLocal calls it, the whole
// is one moment).
func (s *Scope) LocalMembers() map[string][]process.PID {
	out := make(map[string][]process.PID)
	s.root.Load().eachGroup(func(name string, v *groupView) {
		if v.nlocal > 0 {
			out[name] = v.copyLocal()
		}
	})
	return out
}

// SubscribeLocal implements Replica: a scope-wide subscription (Events)
// that sees only the changes of this node's processes, and this node's
// members as of the same loop command. A cluster layer's Sink should never
// refuse an event, or the peers miss a change until the next full sync.
func (s *Scope) SubscribeLocal(opts SubscribeOptions) (*Subscription, map[string][]process.PID, error) {
	sub, err := s.newSub(opts, "", true)
	if err != nil {
		return nil, nil, err
	}
	sub.local = true
	var snap map[string][]process.PID
	err = s.doCtx(opts.ctx(), "subscribe local", func() error {
		if err := s.st.subscribe(sub); err != nil {
			return err
		}
		snap = s.LocalMembers()
		return nil
	})
	if err != nil {
		sub.Close(false) // see Subscribe
		return nil, nil, err
	}
	return sub, snap, nil
}

// Distributor connects scopes to the scopes of the same entry on other
// nodes. The cluster layer implements it and a Kind (or NewWithOptions)
// carries it; the scope calls it once it runs.
type Distributor interface {
	// Attach prepares the distribution of s. It returns nil (and no
	// error) when s stays this node's alone, for instance because the
	// node is not clustered. The scope then hands its process's messages
	// and its peers' exits to the Peering and calls Start.
	Attach(s *Scope) (Peering, error)
}

// Peering is one scope's part in the cluster, made by a Distributor. Its
// state belongs to the scope's loop: Receive, Down and Flush run on it,
// and so does what it runs with Scope.Do and Scope.Submit; it changes the
// scope through OnLoop there, with no command and no wait.
type Peering interface {
	// Start begins the exchange with other nodes. Until it is called
	// nothing is sent; an error fails the scope's start. It runs off the
	// loop (Scope.Do reaches it).
	Start() error
	// Receive handles a message addressed to the scope's process (a
	// topic that begins "pg."), on the loop. It must not block.
	Receive(m process.Message)
	// Down handles the exit of a process of another node that the scope's
	// process monitors (a peer's scope), with its reason, on the loop.
	Down(pid process.PID, reason error)
	// Flush runs on the loop after each round of its work: the changes
	// of this node's members the round made (the Sink of SubscribeLocal
	// saw them) go out together.
	Flush()
	// View describes the peers for the scope's view (JSON).
	View() any
	// Stop ends the peering once the scope's loop has stopped; the
	// goroutine that calls it owns the state then.
	Stop()
}

// OnLoop is the scope's state as code running on its loop sees it (a
// Peering's Receive, Down and Flush, and what it runs with Do and
// Submit): a peer's changes apply at once. Its methods may be called only
// there; elsewhere use the Replica methods, which run them as commands.
type OnLoop struct{ s *Scope }

// OnLoop returns the scope's state as its loop sees it.
func (s *Scope) OnLoop() OnLoop { return OnLoop{s} }

// ApplyOps is Replica.ApplyOps on the loop. Nothing is applied when an op
// is invalid. The scope keeps nothing of ops: a caller may reuse them.
func (o OnLoop) ApplyOps(node string, ops []Op) error {
	if err := o.check(node, ops); err != nil {
		return err
	}
	s := o.s
	// One batch: the groups new to the index are published in one new
	// version of it, then the events go out.
	s.st.beginBatch()
	defer s.st.endBatch()
	for _, op := range ops {
		if op.Leave {
			s.st.remoteLeave(node, op.PIDs, []string{op.Group})
		} else {
			s.st.remoteJoin(node, op.Group, op.PIDs)
		}
	}
	return nil
}

// check refuses ops that are not all valid changes of node's members.
func (o OnLoop) check(node string, ops []Op) error {
	for _, op := range ops {
		if err := o.s.checkGroups([]string{op.Group}); err != nil {
			return err
		}
		if err := o.s.checkNode("remote ops", node, op.PIDs); err != nil {
			return err
		}
	}
	return nil
}

// ApplySync is Replica.ApplySync on the loop; the scope keeps nothing of
// groups.
func (o OnLoop) ApplySync(node string, groups map[string][]process.PID) error {
	s := o.s
	for g, pids := range groups {
		if err := s.checkGroups([]string{g}); err != nil {
			return err
		}
		if err := s.checkNode("remote sync", node, pids); err != nil {
			return err
		}
	}
	own := groups
	for _, pids := range groups {
		if len(pids) == 0 {
			// An empty group is no group: the state holds none.
			own = make(map[string][]process.PID, len(groups))
			for g, pids := range groups {
				if len(pids) > 0 {
					own[g] = pids
				}
			}
			break
		}
	}
	s.st.beginBatch() // see ApplyOps
	defer s.st.endBatch()
	s.st.syncNode(node, own)
	return nil
}

// ApplyNodeDown is Replica.ApplyNodeDown on the loop.
func (o OnLoop) ApplyNodeDown(node string) error {
	if err := o.s.checkNode("node down", node, nil); err != nil {
		return err
	}
	o.s.st.beginBatch() // see ApplyOps
	defer o.s.st.endBatch()
	o.s.st.nodeDown(node)
	return nil
}

// SubscribeLocal is Replica.SubscribeLocal on the loop: the subscription
// and this node's members as of the same moment.
func (o OnLoop) SubscribeLocal(opts SubscribeOptions) (*Subscription, map[string][]process.PID, error) {
	s := o.s
	sub, err := s.newSub(opts, "", true)
	if err != nil {
		return nil, nil, err
	}
	sub.local = true
	if err := s.st.subscribe(sub); err != nil {
		sub.Close(false)
		return nil, nil, err
	}
	return sub, s.LocalMembers(), nil
}

// Do runs fn on the scope's loop and waits for it (protocol_timeout at
// most), with the errors of any operation of the scope: what a Peering
// does to its state from outside the loop.
func (s *Scope) Do(fn func() error) error { return s.do("cluster", fn) }

// Submit runs fn on the scope's loop soon, without waiting: before the
// next queued command, past the queue's limit, so that what the cluster
// reports (a membership change, an answer, a timer) is never refused. It
// fails with ErrStopped once the scope stopped.
func (s *Scope) Submit(fn func()) error {
	if s.stopped.Load() {
		return ErrStopped
	}
	if err := s.loop.SubmitUrgent(func() {
		defer s.recoverLoop(nil)
		fn()
	}); err != nil {
		return ErrStopped
	}
	return nil
}

// InitialSyncer is implemented by a Peering that can tell when the scope
// holds the members of the nodes that were in the cluster when it
// started: WaitSynced returns then, or with ctx's error.
type InitialSyncer interface {
	WaitSynced(ctx context.Context) error
}

// InitialSyncWait bounds how long a scope's start waits for its first
// sync with the cluster's other nodes (InitialSyncer): past it the scope
// runs, and the members of the nodes that did not answer arrive later.
const InitialSyncWait = 10 * time.Second

// waitInitialSync waits, bounded by InitialSyncWait and ctx, for the
// scope's first sync with its peers, so that what starts after the scope
// finds the other nodes' members. A wait cut short is logged, not an
// error: the scope works, and the members come when the peers answer.
func (s *Scope) waitInitialSync(ctx context.Context) {
	w, ok := s.peering().(InitialSyncer)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, InitialSyncWait)
	defer cancel()
	start := time.Now()
	if err := w.WaitSynced(ctx); err != nil {
		s.log.Warn("pg: started before every other node's members arrived; they follow when the nodes answer",
			"waited", time.Since(start).Round(time.Millisecond), "error", err)
		return
	}
	s.log.Debug("pg: first sync with the other nodes done", "took", time.Since(start).Round(time.Millisecond))
}

// peeringBox holds a Peering in an atomic.Pointer.
type peeringBox struct{ p Peering }

// peering returns the scope's peering, nil when it is this node's alone.
func (s *Scope) peering() Peering {
	if b := s.dist.Load(); b != nil {
		return b.p
	}
	return nil
}

// distribute attaches s through d and starts the exchange; on error the
// scope is stopped.
func (s *Scope) distribute(d Distributor) error {
	p, err := d.Attach(s)
	if err != nil {
		return fmt.Errorf("pg scope %s: cluster: %w", s.id, err)
	}
	if p == nil {
		return nil
	}
	s.dist.Store(&peeringBox{p})
	if err := p.Start(); err != nil {
		return fmt.Errorf("pg scope %s: cluster: %w", s.id, err)
	}
	return nil
}
