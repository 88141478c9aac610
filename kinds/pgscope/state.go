package pgscope

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/proctor-run/proctor/process"
)

// state is everything the scope's loop owns. Only loop commands touch it;
// readers use the views it publishes.
//
// Membership is kept per node: the local node's members of a group in
// groupState.local, every other node's in groupState.remote. The
// cluster protocol applies a peer's joins, leaves and full syncs to its own
// node's slice (remoteJoin, remoteLeave, syncNode, nodeDown) and every
// change is diffed, so only real changes raise events.
type state struct {
	s *Scope

	groups map[string]*groupState
	// procs are keyed by PID.ID: the scope tracks local processes only,
	// and the PIDs of one node's incarnation differ in nothing else (no
	// name to hash on every join and leave).
	procs map[uint64]*procState
	// nodes maps a remote node to the groups it has members in.
	nodes map[string]map[string]struct{}
	// peers are the remote nodes heard from and not down (health.go).
	peers map[string]struct{}

	// groupSubs are each group's subscriptions, scopeFan the scope-wide
	// ones (delivery.go); clusterSubs the scope-wide subscriptions to
	// this node's changes only (a replica's, fed on the loop): a remote
	// change that no other subscription takes builds no event.
	groupSubs   map[string]*fanout
	scopeFan    fanout
	clusterSubs map[*Subscription]struct{}
	// queues are the fanouts' delivery queues, for callers (delivery.go).
	queues queues

	members int // memberships over every group and node, with multiplicity
	// live counts the groups with members; groups also holds the vacant
	// ones, whose cells wait in the index for a sweep.
	live, vacant int
	// idle counts the procStates kept, monitored, with neither groups nor
	// subscriptions (see untrack).
	idle int

	spare       []*procState  // emptied procStates for reuse
	spareGroups []*groupState // swept groupStates for reuse

	// downs are the local processes whose EXIT arrived and is not yet
	// applied: the exits of one round of the loop are one change of
	// each group they touch (settleDowns).
	downs []process.PID
	dirty []*groupState
	// scratch are lists the loop reuses (remoteLeave's kept and gone
	// members), copied by whatever keeps them.
	scratch [2][]process.PID

	// A batch (beginBatch to endBatch: one command or message that
	// changes many groups) publishes its new groups' cells in one new
	// version of the index (root, built in place by tr), and only then
	// offers its events (held), so that an event's group is visible, as
	// outside a batch.
	batching bool
	tr       htransient
	root     *hnode // the index being built; set by rootSet
	rootSet  bool
	held     []heldEvent
}

// heldEvent is an event of a batch, offered at its end.
type heldEvent struct {
	kind   EventKind
	group  string
	pids   []process.PID
	shared *sharedValue
	local  bool
}

// groupState is a group as the loop keeps it. An empty group whose cell is
// still in the index stays here too (vacant), so that filling it again
// finds both.
type groupState struct {
	name string
	cell *groupCell // nil until the group first has members
	// local are this node's members, a persistent set that each version
	// shares (memberSet); next is the sequence number of the next join.
	local  memberSet
	next   uint64
	remote remoteSet // the other nodes' members, shared by the published versions
	count  int
	// dirty: changed by exits not yet published (see settleDowns).
	dirty bool
}

// procState is a local process the scope monitors: because it joined
// groups, owns subscriptions, or both, or did a short while ago (idle; see
// untrack).
type procState struct {
	pid    process.PID
	groups procGroups
	subs   map[*Subscription]struct{}
	peak   int  // most groups at once: a map that grew large is not kept
	idle   bool // neither groups nor subscriptions left
}

func newState(s *Scope) state {
	return state{
		s:           s,
		groups:      make(map[string]*groupState),
		procs:       make(map[uint64]*procState),
		nodes:       make(map[string]map[string]struct{}),
		peers:       make(map[string]struct{}),
		groupSubs:   make(map[string]*fanout),
		clusterSubs: make(map[*Subscription]struct{}),
	}
}

// beginBatch starts a batch of changes; see state.batching.
func (st *state) beginBatch() { st.batching = true }

// endBatch publishes the batch's index, then offers its events in order.
func (st *state) endBatch() {
	st.batching = false
	st.publishRoot()
	held := st.held
	for i, e := range held {
		st.raise(e.kind, e.group, e.pids, e.shared, e.local)
		held[i] = heldEvent{}
	}
	st.held = held[:0]
}

// insert adds a new group's cell to the index: at once, or into the
// batch's version.
func (st *state) insert(c *groupCell) {
	h := hashGroup(c.name)
	if !st.batching {
		root, _ := st.s.root.Load().with(h, c, 0)
		st.s.root.Store(root)
		return
	}
	if !st.rootSet {
		st.root, st.rootSet = st.s.root.Load(), true
	}
	st.root, _ = st.root.withIn(&st.tr, h, c, 0)
}

// publishRoot publishes the index a batch built so far: readers may hold
// its nodes from now on, so the batch copies them again.
func (st *state) publishRoot() {
	if st.rootSet {
		st.s.root.Store(st.root)
		st.root, st.rootSet = nil, false
		st.tr.reset()
	}
}

// counted is a group named in a batch with how often it was named.
type counted struct {
	group string
	n     int
}

// tally folds a list of groups into distinct groups with counts, in order
// of first appearance, appending to buf (a caller's stack array for the
// usual batch of one). Short batches scan; long ones use a map.
func tally(groups []string, buf []counted) []counted {
	out := buf[:0]
	if len(groups) == 1 {
		// The usual batch.
		return append(out, counted{groups[0], 1})
	}
	if len(groups) > 16 {
		at := make(map[string]int, len(groups))
		for _, g := range groups {
			if i, ok := at[g]; ok {
				out[i].n++
				continue
			}
			at[g] = len(out)
			out = append(out, counted{g, 1})
		}
		return out
	}
next:
	for _, g := range groups {
		for i := range out {
			if out[i].group == g {
				out[i].n++
				continue next
			}
		}
		out = append(out, counted{g, 1})
	}
	return out
}

func repeat(pid process.PID, n int) []process.PID {
	out := make([]process.PID, n)
	for i := range out {
		out[i] = pid
	}
	return out
}

// track returns the procState of a local process, monitoring it first when
// it is new to the scope.
func (st *state) track(pid process.PID) (*procState, error) {
	if ps := st.procs[pid.ID]; ps != nil && ps.pid == pid {
		if ps.idle {
			ps.idle = false
			st.idle--
		}
		return ps, nil
	}
	if !st.s.node.IsLocal(pid) {
		return nil, fmt.Errorf("track %s: %w", pid, ErrNotLocal)
	}
	// A process that is already gone gets its EXIT at once; it is removed
	// when that event is handled, as OTP does with an immediate DOWN.
	if err := st.s.node.Monitor(st.s.pid, pid); err != nil {
		return nil, fmt.Errorf("monitor %s: %w", pid, err)
	}
	var ps *procState
	if n := len(st.spare); n > 0 {
		ps, st.spare = st.spare[n-1], st.spare[:n-1]
	} else {
		ps = &procState{}
	}
	ps.pid = pid
	st.procs[pid.ID] = ps
	return ps, nil
}

// proc returns the procState of pid, nil when the scope does not track it.
func (st *state) proc(pid process.PID) *procState {
	if ps := st.procs[pid.ID]; ps != nil && ps.pid == pid {
		return ps
	}
	return nil
}

// untrack marks a process that has no groups and no subscriptions left
// idle. Its monitor stays until idle processes outnumber the others (and
// 64), when dropIdle drops every idle one: a process that joins and leaves
// over and over is monitored once, not once per join, and the scope never
// monitors more than twice the processes it serves (and 64). An idle
// process that exits is forgotten at its EXIT, as any other.
func (st *state) untrack(pid process.PID, ps *procState) {
	if ps.idle || ps.groups.len() > 0 || len(ps.subs) > 0 {
		return
	}
	ps.idle = true
	st.idle++
	if st.idle > max(64, len(st.procs)-st.idle) {
		st.dropIdle()
	}
}

// dropIdle forgets every idle process and drops its monitor.
func (st *state) dropIdle() {
	for id, ps := range st.procs {
		if ps.idle {
			delete(st.procs, id)
			st.s.node.Demonitor(st.s.pid, ps.pid)
			st.recycle(ps)
		}
	}
	st.idle = 0
}

// join adds one membership of pid per naming of each group, all or nothing.
func (st *state) join(pid process.PID, groups []string) error {
	spec := st.s.spec.Load()
	var buf [4]counted
	batch := tally(groups, buf[:])
	if spec.MaxGroups > 0 {
		fresh := 0
		for _, c := range batch {
			if gs := st.groups[c.group]; gs == nil || gs.count == 0 {
				fresh++
			}
		}
		if fresh > 0 && st.live+fresh > spec.MaxGroups {
			return fmt.Errorf("join %s: %w: max_groups is %d, %d exist", pid, ErrTooManyGroups, spec.MaxGroups, st.live)
		}
	}
	if spec.MaxMembersPerGroup > 0 {
		for _, c := range batch {
			have := 0
			if gs := st.groups[c.group]; gs != nil {
				have = gs.count
			}
			if have+c.n > spec.MaxMembersPerGroup {
				return fmt.Errorf("join %s to %q: %w: max_members_per_group is %d, it has %d", pid, c.group, ErrGroupFull, spec.MaxMembersPerGroup, have)
			}
		}
	}
	ps, err := st.track(pid)
	if err != nil {
		return err
	}
	for _, c := range batch {
		gs := st.group(c.group)
		for range c.n {
			gs.local = gs.local.with(gs.next, pid)
			ps.groups.add(gs, gs.next)
			gs.next++
		}
		gs.count += c.n
		st.members += c.n
		ps.peak = max(ps.peak, ps.groups.len())
		st.publish(c.group, gs)
		st.s.m.joins.Add(float64(c.n))
		st.notifyN(MemberJoined, c.group, pid, c.n)
	}
	return nil
}

// leave removes as many memberships of pid as each group is named, as far
// as it has them. It fails with ErrNotJoined only when it removed nothing.
func (st *state) leave(pid process.PID, groups []string) error {
	ps := st.proc(pid)
	if ps == nil || ps.groups.len() == 0 {
		return fmt.Errorf("leave %s: %w", pid, ErrNotJoined)
	}
	removed := 0
	var buf [4]counted
	for _, c := range tally(groups, buf[:]) {
		gs := st.groups[c.group]
		if gs == nil {
			continue
		}
		k := min(c.n, ps.groups.count(gs))
		if k == 0 {
			continue
		}
		st.dropLocal(pid, ps, gs, k)
		removed += k
		st.notifyN(MemberLeft, c.group, pid, k)
	}
	if removed == 0 {
		return fmt.Errorf("leave %s: %w", pid, ErrNotJoined)
	}
	st.untrack(pid, ps)
	return nil
}

// dropLocal removes k memberships of pid from gs, the most recent copies
// first as OTP's list deletion does, and publishes it.
func (st *state) dropLocal(pid process.PID, ps *procState, gs *groupState, k int) {
	for range k {
		seq, _ := ps.groups.pop(gs)
		st.unjoin(gs, seq)
	}
	st.publish(gs.name, gs)
	st.s.m.leaves.Add(float64(k))
}

// unjoin removes the membership seq of gs, unpublished.
func (st *state) unjoin(gs *groupState, seq uint64) {
	var ok bool
	if gs.local, ok = gs.local.without(seq); !ok {
		panic("pgscope: a membership is missing from its group")
	}
	if gs.local.len() == 0 {
		// Numbering starts over, so a group that a process joins and
		// leaves over and over stays a trie of one level.
		gs.next = 0
	}
	gs.count--
	st.members--
}

// processDown takes the EXIT of a monitored local process. The exits that
// arrive together (one round of the loop, as when thousands of members
// end at once) are applied together by settleDowns, which runs before the
// loop's next command: each group they touch is published once.
func (st *state) processDown(pid process.PID) {
	if st.proc(pid) == nil {
		// A late EXIT: the process had already left everything.
		return
	}
	st.downs = append(st.downs, pid)
	if len(st.downs) == 1 {
		st.s.urgentDo(st.settleDowns)
	}
}

// settleDowns applies the exits taken: every copy of every membership of
// each process leaves, its groups are published, then one event per copy
// is raised, as OTP sends one per group entry of the process, and its
// subscriptions end.
func (st *state) settleDowns() {
	downs := st.downs
	st.downs = nil
	type left struct {
		pid   process.PID
		group string
		n     int
	}
	var events []left
	for _, pid := range downs {
		ps := st.proc(pid)
		if ps == nil {
			continue
		}
		if ps.idle {
			st.idle--
		}
		delete(st.procs, pid.ID)
		from := len(events)
		for _, e := range ps.groups.list {
			e.seqs(func(seq uint64) { st.unjoin(e.gs, seq) })
			if !e.gs.dirty {
				e.gs.dirty = true
				st.dirty = append(st.dirty, e.gs)
			}
			events = append(events, left{pid, e.gs.name, e.n})
			st.s.m.leaves.Add(float64(e.n))
		}
		slices.SortFunc(events[from:], func(a, b left) int { return strings.Compare(a.group, b.group) })
		ps.groups.reset()
		for sub := range ps.subs {
			sub.end(false)
			st.unregisterSub(sub)
		}
		st.recycle(ps)
	}
	// publish may sweep emptied groups: the names were read first.
	for _, gs := range st.dirty {
		gs.dirty = false
		st.publish(gs.name, gs)
	}
	clear(st.dirty)
	st.dirty = st.dirty[:0]
	for _, e := range events {
		for range e.n {
			st.notifyN(MemberLeft, e.group, e.pid, 1)
		}
	}
}

// recycle keeps an emptied procState (and its maps) for the next process,
// so a process that joins and leaves over and over costs no allocation.
func (st *state) recycle(ps *procState) {
	ps.idle, ps.pid = false, process.PID{}
	if len(st.spare) < 64 && ps.peak <= 64 {
		ps.groups.reset()
		clear(ps.subs)
		st.spare = append(st.spare, ps)
	}
}

func (st *state) group(name string) *groupState {
	gs := st.groups[name]
	if gs == nil {
		if n := len(st.spareGroups); n > 0 {
			gs, st.spareGroups = st.spareGroups[n-1], st.spareGroups[:n-1]
		} else {
			gs = &groupState{}
		}
		gs.name = name
		st.groups[name] = gs
	}
	return gs
}

// publish makes the current membership of group visible to readers: a
// fresh immutable view in the group's cell, or none when the group emptied
// (groups exist only while they have members). Only a group's first
// members add its cell to the index; an emptied group's cell stays, vacant,
// until there are more vacant cells than groups, when a sweep removes them
// all, so the index holds at most twice the groups (and 64 more).
func (st *state) publish(name string, gs *groupState) {
	s := st.s
	switch {
	case gs.count > 0:
		// The set is shared, and so are its lists: the loop only ever
		// appends to them past what a published version reads, or
		// replaces them (remoteSet.with).
		switch {
		case gs.cell == nil:
			gs.cell = newCell(name, gs.local, gs.remote, gs.count)
			st.insert(gs.cell)
			st.live++
		case gs.cell.cur.Swap(newGroupView(gs.local, gs.remote, gs.count)) == nil:
			st.live++
			st.vacant--
		}
	case gs.cell == nil:
		// Never published (a sync that brought nothing): nothing to undo.
		delete(st.groups, name)
		st.recycleGroup(gs)
	case gs.cell.cur.Swap(nil) != nil:
		st.live--
		st.vacant++
		if st.vacant > max(64, st.live) {
			st.sweep()
		}
	}
	s.ngroups.Store(int64(st.live))
	s.m.groups.Set(float64(st.live))
	s.m.members.Set(float64(st.members))
}

// sweep removes the vacant cells from the index and forgets their groups.
func (st *state) sweep() {
	st.publishRoot()
	root := st.s.root.Load()
	for name, gs := range st.groups {
		if gs.count > 0 || gs.dirty {
			// A dirty group is still published as it was: not vacant yet.
			continue
		}
		if gs.cell != nil {
			root, _ = root.without(gs.cell.hash, name, 0)
		}
		delete(st.groups, name)
		st.recycleGroup(gs)
	}
	st.vacant = 0
	st.s.root.Store(root)
}

// recycleGroup keeps a forgotten groupState for the next new group, so
// that churn over many names costs few allocations.
func (st *state) recycleGroup(gs *groupState) {
	gs.cell, gs.name = nil, ""
	gs.local, gs.next = memberSet{}, 0
	if len(st.spareGroups) < 64 && len(gs.remote) == 0 {
		st.spareGroups = append(st.spareGroups, gs)
	}
}

// notifyN is notify for n copies of one PID; the list is built only when
// someone listens, and the usual event of one PID is one allocation.
func (st *state) notifyN(kind EventKind, group string, pid process.PID, n int) {
	st.s.events.Add(1)
	local := st.s.node.IsLocal(pid)
	if !st.listened(group, local) {
		return
	}
	if n == 1 {
		pids, shared := newEvent1(pid)
		st.emit(kind, group, pids, shared, local)
		return
	}
	st.emit(kind, group, repeat(pid, n), &sharedValue{}, local)
}

// listened reports whether a change of group, of this node's members or
// not (local), has a subscription to take it.
func (st *state) listened(group string, local bool) bool {
	if st.scopeFan.live > 0 || (local && len(st.clusterSubs) > 0) {
		return true
	}
	return len(st.groupSubs) > 0 && st.groupSubs[group] != nil
}

// notify offers an event to the group's monitors and the scope's. pids
// are the caller's (a scratch list, a message's): the event copies them,
// only when someone listens.
func (st *state) notify(kind EventKind, group string, pids []process.PID) {
	st.s.events.Add(1)
	// The PIDs of one event are all of one node.
	local := len(pids) > 0 && st.s.node.IsLocal(pids[0])
	if !st.listened(group, local) {
		return
	}
	var shared *sharedValue
	if len(pids) == 1 {
		pids, shared = newEvent1(pids[0])
	} else {
		pids, shared = slices.Clone(pids), &sharedValue{}
	}
	st.emit(kind, group, pids, shared, local)
}

// emit offers an event whose list and shared value are its own: at once,
// or at the end of the batch.
func (st *state) emit(kind EventKind, group string, pids []process.PID, shared *sharedValue, local bool) {
	if st.batching {
		st.held = append(st.held, heldEvent{kind, group, pids, shared, local})
		return
	}
	st.raise(kind, group, pids, shared, local)
}

// raise builds one event and offers it to the group's monitors and the
// scope's.
func (st *state) raise(kind EventKind, group string, pids []process.PID, shared *sharedValue, local bool) {
	ev := Event{Kind: kind, Group: group, PIDs: pids, shared: shared}
	if f := st.groupSubs[group]; f != nil {
		st.offer(f, group, ev)
	}
	if local {
		for sub := range st.clusterSubs {
			sub.offer(ev)
		}
	}
	if st.scopeFan.live > 0 {
		st.offer(&st.scopeFan, "", ev)
	}
}

// members returns a copy of group's members, for a monitor's snapshot.
func (st *state) membersOf(group string) []process.PID {
	v := st.s.root.Load().get(hashGroup(group), group).view()
	if v == nil {
		return []process.PID{}
	}
	return v.copyAll()
}

// subscribe registers sub, owned by a local process (or by nobody).
func (st *state) subscribe(sub *Subscription) error {
	sub.mu.Lock()
	abandoned := sub.closed
	sub.mu.Unlock()
	if abandoned {
		// Its caller gave up waiting (timeout) and closed it.
		return fmt.Errorf("monitor: %w", ErrTimeout)
	}
	if !sub.owner.IsZero() {
		ps, err := st.track(sub.owner)
		if err != nil {
			return err
		}
		if len(ps.subs) >= MaxSubscriptionsPerProcess {
			return fmt.Errorf("subscribe %s: %w: a process may hold at most %d subscriptions of a scope", sub.owner, ErrTooManySubscriptions, MaxSubscriptionsPerProcess)
		}
		if ps.subs == nil {
			ps.subs = make(map[*Subscription]struct{})
		}
		ps.subs[sub] = struct{}{}
	}
	switch {
	case sub.all && sub.local:
		st.clusterSubs[sub] = struct{}{}
	case sub.all:
		st.scopeFan.add(sub)
	default:
		f := st.groupSubs[sub.group]
		if f == nil {
			f = &fanout{}
			st.groupSubs[sub.group] = f
		}
		f.add(sub)
	}
	sub.reg = true
	st.s.m.subscribers.Inc()
	return nil
}

// unregisterSub forgets sub in the scope's maps; it reports whether it was
// registered.
func (st *state) unregisterSub(sub *Subscription) bool {
	if !sub.reg {
		return false
	}
	sub.reg = false
	switch {
	case sub.all && sub.local:
		delete(st.clusterSubs, sub)
	case sub.all:
		st.scopeFan.remove()
	default:
		f := st.groupSubs[sub.group]
		if f.remove(); f.live == 0 {
			delete(st.groupSubs, sub.group)
			if f.q != nil {
				st.queues.drop(sub.group)
			}
		}
	}
	st.s.m.subscribers.Dec()
	return true
}

// removeSub handles a closed subscription: it is forgotten, and its owner
// is no longer monitored on its account.
func (st *state) removeSub(sub *Subscription) {
	if !st.unregisterSub(sub) || sub.owner.IsZero() {
		return
	}
	if ps := st.proc(sub.owner); ps != nil {
		delete(ps.subs, sub)
		st.untrack(sub.owner, ps)
	}
}

// snapshotAll returns every group's members, for a scope subscription.
func (st *state) snapshotAll() map[string][]process.PID {
	out := make(map[string][]process.PID, st.live)
	st.s.root.Load().eachGroup(func(name string, v *groupView) { out[name] = v.copyAll() })
	return out
}

// closeAll ends every subscription; it runs once the loop has stopped.
func (st *state) closeAll() {
	end := func(sub *Subscription) { sub.end(false) }
	for sub := range st.clusterSubs {
		end(sub)
	}
	st.scopeFan.each(end)
	for _, f := range st.groupSubs {
		f.each(end)
	}
	st.s.m.subscribers.Set(0)
	st.clusterSubs = map[*Subscription]struct{}{}
	st.scopeFan = fanout{q: st.scopeFan.q}
	st.groupSubs = map[string]*fanout{}
}

// The methods below are the seam of the cluster protocol (cluster.go): it
// applies what a peer node reports to that node's share of the state, and
// each change is diffed against what was known so only real changes raise
// events.

// remoteJoin records that pids of node joined group.
func (st *state) remoteJoin(node, group string, pids []process.PID) {
	st.heard(node)
	if len(pids) == 0 {
		return
	}
	gs := st.group(group)
	gs.remote = gs.remote.joined(node, pids)
	gs.count += len(pids)
	st.members += len(pids)
	st.nodeGroups(node)[group] = struct{}{}
	st.publish(group, gs)
	st.notify(MemberJoined, group, pids)
}

// remoteLeave records that pids of node left each of groups; copies that
// were never known are ignored and raise no event.
func (st *state) remoteLeave(node string, pids []process.PID, groups []string) {
	st.heard(node)
	for _, g := range groups {
		gs := st.groups[g]
		if gs == nil || len(gs.remote.get(node)) == 0 {
			continue
		}
		kept, gone := st.scratch[0][:0], st.scratch[1][:0]
		n := multisetMinus(gs.remote.get(node), pids, &kept, &gone)
		if n > 0 {
			st.setRemote(node, g, gs, kept)
			st.notify(MemberLeft, g, gone)
		}
		st.keepScratch(0, kept)
		st.keepScratch(1, gone)
	}
}

// keepScratch keeps a list the loop used for scratch, unless it grew
// large: a leave of thousands of PIDs keeps no memory after it.
func (st *state) keepScratch(i int, s []process.PID) {
	if cap(s) <= 64 {
		clear(s)
		st.scratch[i] = s[:0]
	}
}

// syncNode replaces everything known of node by groups (a full sync) and
// raises events only for the difference.
func (st *state) syncNode(node string, groups map[string][]process.PID) {
	st.heard(node)
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	for g := range st.nodes[node] {
		if _, ok := groups[g]; !ok {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	for _, g := range names {
		want := groups[g]
		var have []process.PID
		gs := st.groups[g]
		if gs != nil {
			have = gs.remote.get(node)
		}
		if slices.Equal(want, have) {
			// The usual case of anti-entropy: nothing changed.
			continue
		}
		// Both lists share the same members (their multiset
		// intersection, common): what is left of each is what changed.
		common := multisetMinus(want, have, nil, nil)
		if common == len(want) && common == len(have) {
			// The same members in another order: no change.
			continue
		}
		if gs == nil {
			gs = st.group(g)
		}
		st.setRemote(node, g, gs, want)
		if !st.listened(g, false) {
			// Counted as raised, as notify does; no lists for nobody.
			st.s.events.Add(uint64(min(1, len(have)-common) + min(1, len(want)-common)))
			continue
		}
		var added, removed []process.PID
		multisetMinus(want, have, &added, nil)
		multisetMinus(have, want, &removed, nil)
		if len(removed) > 0 {
			st.notify(MemberLeft, g, removed)
		}
		if len(added) > 0 {
			st.notify(MemberJoined, g, added)
		}
	}
}

// nodeDown removes every member of node, as when it leaves the cluster.
func (st *state) nodeDown(node string) {
	st.syncNode(node, nil)
	delete(st.nodes, node)
	st.lost(node)
}

func (st *state) nodeGroups(node string) map[string]struct{} {
	m := st.nodes[node]
	if m == nil {
		m = make(map[string]struct{})
		st.nodes[node] = m
	}
	return m
}

// setRemote stores a copy of node's members of group and publishes the
// group.
func (st *state) setRemote(node, group string, gs *groupState, pids []process.PID) {
	old := len(gs.remote.get(node))
	gs.remote = gs.remote.synced(node, pids)
	if len(pids) == 0 {
		if m := st.nodes[node]; m != nil {
			delete(m, group)
		}
	} else {
		st.nodeGroups(node)[group] = struct{}{}
	}
	gs.count += len(pids) - old
	st.members += len(pids) - old
	st.publish(group, gs)
}

// multisetMinus appends a minus b (respecting multiplicity) to *kept and
// the copies of b's elements it removed from a to *gone (each when not
// nil), and returns how many it removed. A nil *kept is allocated only
// when something is kept.
func multisetMinus(a, b []process.PID, kept, gone *[]process.PID) int {
	keep := func(p process.PID) {
		if kept == nil {
			return
		}
		if *kept == nil {
			*kept = make([]process.PID, 0, len(a))
		}
		*kept = append(*kept, p)
	}
	removed := 0
	drop := func(p process.PID) {
		removed++
		if gone != nil {
			*gone = append(*gone, p)
		}
	}
	switch {
	case len(b) == 0:
		for _, p := range a {
			keep(p)
		}
	case len(b) <= 16:
		// A few members, as most groups have: a scan beats a map.
		var usedBuf [16]bool
		used := usedBuf[:len(b)]
	next:
		for _, p := range a {
			for j, q := range b {
				if !used[j] && p == q {
					used[j] = true
					drop(p)
					continue next
				}
			}
			keep(p)
		}
	default:
		want := make(map[process.PID]int, len(b))
		for _, p := range b {
			want[p]++
		}
		for _, p := range a {
			if want[p] > 0 {
				want[p]--
				drop(p)
				continue
			}
			keep(p)
		}
	}
	return removed
}
