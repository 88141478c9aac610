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

// heard records traffic from node's scope; on the loop.
func (st *state) heard(node string) {
	if _, ok := st.peers[node]; !ok {
		st.peers[node] = struct{}{}
		st.s.peers.Store(int64(len(st.peers)))
	}
	st.s.lastTraffic.Store(time.Now().UnixNano())
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
	sp := s.spec.Load()
	if s.peers.Load() == 0 || sp.AntiEntropyInterval == 0 {
		return nil
	}
	limit := 3 * sp.AntiEntropyInterval
	quiet := time.Since(time.Unix(0, s.lastTraffic.Load()))
	if quiet > limit {
		return fmt.Errorf("pg scope %s: no broadcast traffic for %s with %d peers", s.id, quiet.Round(time.Second), s.peers.Load())
	}
	return nil
}
