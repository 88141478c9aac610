package pgscope

import (
	"fmt"
	"time"
)

// The pg.broadcast_recent health check watches the traffic between the
// scope and its peers: the remote nodes whose scope it has heard from (a
// join, a leave or a sync, applied through the state's cluster seam) and
// that have not gone down since. On a single node there are none, and the
// check has nothing to hear.

// heard records traffic from node's scope; on the loop. It only counts:
// the health check, which runs far less often than peers' operations
// arrive, turns a moved count into a time (see noteHeard).
func (st *state) heard(node string) {
	if _, ok := st.peers[node]; !ok {
		st.peers[node] = struct{}{}
		st.s.peers.Store(int64(len(st.peers)))
	}
	st.s.heardOps.Add(1)
}

// noteHeard stamps lastTraffic with now when peers' operations arrived
// since the check before. Traffic is thus dated at most one check late:
// a scope falls silent at most one check period before it is seen to.
func (s *Scope) noteHeard(now time.Time) {
	if n := s.heardOps.Load(); s.heardSeen.Swap(n) != n {
		s.lastTraffic.Store(now.UnixNano())
	}
}

// lost forgets node, which left the cluster; on the loop.
func (st *state) lost(node string) {
	delete(st.peers, node)
	st.s.peers.Store(int64(len(st.peers)))
}

// checkBroadcastRecent is the pg.broadcast_recent health check: a scope
// with peers that has seen no broadcast traffic for three anti-entropy
// periods has a stuck loop or a lasting partition, since every peer sends
// a full sync to one peer per period. Without peers there is nothing to
// hear; with anti-entropy off nothing is sent periodically, so quiet is
// no sign of trouble: the scope is then healthy while it runs.
func (s *Scope) checkBroadcastRecent() error {
	if s.stopped.Load() {
		return fmt.Errorf("pg scope %s: %w", s.id, ErrStopped)
	}
	now := time.Now()
	s.noteHeard(now)
	sp := s.spec.Load()
	if s.peers.Load() == 0 || sp.AntiEntropyInterval == 0 {
		return nil
	}
	limit := 3 * sp.AntiEntropyInterval
	quiet := now.Sub(time.Unix(0, s.lastTraffic.Load()))
	if quiet > limit {
		return fmt.Errorf("pg scope %s: no broadcast traffic for %s with %d peers", s.id, quiet.Round(time.Second), s.peers.Load())
	}
	return nil
}
