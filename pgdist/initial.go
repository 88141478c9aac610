package pgdist

import (
	"context"
	"errors"

	"github.com/proctor-run/proctor/kinds/pgscope"
)

// The first sync. A scope that starts on a node that has just joined
// knows nobody's members; its discover's answers bring them a moment
// later. Services started after the scope (and a runner's --main) should
// find the members of the nodes the cluster already had, as the runner's
// docs promise, so the scope's start waits, bounded, until each peer live
// when it started has answered: its full state applied for the peers it
// asked with discover, its hello answered for the others (those with
// members send their state on the start notice, shortly after), or the
// peer is gone or runs no scope of the entry.

// initialState is the loop's record of the first sync: the peers still
// awaited, true for those that owe their full state.
type initialState struct {
	awaited map[string]bool
	done    chan struct{} // closed once none is awaited (or the replica stopped)
}

// awaitInitial records, at begin, the live peers the first sync waits
// for; asked are those sent a discover. Until then there is nothing to
// check: a message that reaches the scope's loop before its start (its
// name is registered first) must not end the first sync.
func (r *replica) awaitInitial(live []*peer, asked int) {
	r.initial.awaited = make(map[string]bool, len(live))
	for i, p := range live {
		r.initial.awaited[p.node] = i < asked
	}
	r.checkInitial()
}

// checkInitial drops the peers that have answered from the awaited set,
// and closes done when none is left. It runs on the loop after changes,
// from begin on (awaited is nil before, and once done).
func (r *replica) checkInitial() {
	if r.initial.awaited == nil {
		return
	}
	for node, needState := range r.initial.awaited {
		p := r.peers[node]
		switch {
		case p == nil, !p.live, p.absent, p.synced:
		case !needState && !p.pid.IsZero():
		default:
			continue
		}
		delete(r.initial.awaited, node)
	}
	if len(r.initial.awaited) == 0 {
		r.initial.awaited = nil
		close(r.initial.done)
	}
}

// errReplicaStopped: the scope stopped before its first sync.
var errReplicaStopped = errors.New("pgdist: the scope stopped")

// WaitSynced implements pgscope.InitialSyncer: it returns once every peer
// live when the scope started has answered (see above), or with ctx's
// error, or when the scope stops.
func (r *replica) WaitSynced(ctx context.Context) error {
	select {
	case <-r.initial.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-r.quit:
		return errReplicaStopped
	}
}

var _ pgscope.InitialSyncer = (*replica)(nil)
