package pgdist

import (
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/process"
)

// PeerView is one other node as a scope's view shows it (GET /v1/pg).
type PeerView struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Live tells whether it is a live cluster member.
	Live bool `json:"live"`
	// Scope is its scope's process, once verified ("" before).
	Scope string `json:"scope,omitempty"`
	// Synced tells whether its whole state has been applied since its
	// scope was last (re)connected.
	Synced bool `json:"synced"`
	// Verifying tells whether a hello to its scope is out.
	Verifying bool `json:"verifying,omitempty"`
	// Absent tells that it runs no scope of this entry, as far as is
	// known: it is sent nothing until one announces itself there.
	Absent bool `json:"absent,omitempty"`
	// Breaker is its circuit breaker: closed, open or half_open.
	Breaker string `json:"breaker"`
	// Owed is what it is owed because a send failed: "sync" (this node's
	// whole state) or "discover" (both states); "" when nothing.
	Owed string `json:"owed,omitempty"`
	// Retries is how many retries of that have been made.
	Retries int `json:"retries"`
	// Heard is when a message from its scope was last applied.
	Heard *time.Time `json:"heard,omitempty"`
}

// peerSnap is what the loop publishes of a peer.
type peerSnap struct {
	node      string
	live      bool
	pid       process.PID
	synced    bool
	verifying bool
	absent    bool
	br        breaker
	want      want
	attempt   int
	heard     *atomic.Int64 // the peer's: read when shown
}

// publishEvery is the least time between two publications of the peers
// while they keep changing. A start that hears from a hundred peers
// changes them in nearly every round of its loop, and each publication
// copies them all: O(peers) per round, O(peers²) per start. The view is
// for people and metrics, and lags the loop by this much at most.
const publishEvery = 50 * time.Millisecond

// publishIfChanged publishes the peers when one changed, at most every
// publishEvery: a change sooner than that after the last publication is
// published by a timer, when the interval is up. The first sync's record
// is checked at once, every time.
func (r *replica) publishIfChanged() {
	if !r.changed {
		return
	}
	r.checkInitial()
	if r.pubArmed {
		return // the timer publishes this change
	}
	now := time.Now()
	if wait := publishEvery - now.Sub(r.pubAt); wait > 0 {
		r.pubArmed = true
		if r.pubTimer == nil {
			r.pubTimer = time.AfterFunc(wait, func() { r.submit(r.publishDue) })
		} else {
			r.pubTimer.Reset(wait)
		}
		return
	}
	r.publish(now)
}

// publishDue is the publication timer's work, on the loop.
func (r *replica) publishDue(now time.Time) {
	r.pubArmed = false
	if r.changed {
		r.publish(now)
	}
}

// publishNow publishes the peers at once if one changed (a test's settle:
// what it reads next is the loop's state).
func (r *replica) publishNow() {
	if r.changed {
		r.checkInitial()
		r.publish(time.Now())
	}
}

func (r *replica) publish(now time.Time) {
	r.changed = false
	r.pubAt = now
	out := make([]peerSnap, len(r.list))
	verified := 0
	for i, p := range r.list {
		out[i] = peerSnap{node: p.node, live: p.live, pid: p.pid, synced: p.synced, verifying: !p.verifying.IsZero() || p.probing, absent: p.absent,
			br: p.br, want: p.want, attempt: p.attempt, heard: p.heard}
		if !p.pid.IsZero() {
			verified++
		}
	}
	r.snap.Store(&out)
	r.met.peers.Set(float64(verified))
}

// View implements pgscope.Peering: the peers, by node name.
func (r *replica) View() any {
	snap := *r.snap.Load()
	now, reset := time.Now(), r.s.Spec().CircuitBreakerResetTime
	out := make([]PeerView, len(snap))
	for i, p := range snap {
		v := PeerView{Node: p.node, Live: p.live, Synced: p.synced, Verifying: p.verifying, Absent: p.absent,
			Breaker: p.br.shown(now, reset).String(), Retries: p.attempt}
		if !p.pid.IsZero() {
			v.Scope = p.pid.String()
		}
		switch {
		case p.want&wantDiscover != 0:
			v.Owed = "discover"
		case p.want&wantSync != 0:
			v.Owed = "sync"
		}
		if ns := p.heard.Load(); ns != 0 {
			h := time.Unix(0, ns)
			v.Heard = &h
		}
		out[i] = v
	}
	return out
}

// BreakerStates implements BreakerSource (GET /v1/cluster and the
// breaker metric).
func (r *replica) BreakerStates() map[string]string {
	snap := *r.snap.Load()
	now, reset := time.Now(), r.s.Spec().CircuitBreakerResetTime
	out := make(map[string]string, len(snap))
	for _, p := range snap {
		out[p.node] = p.br.shown(now, reset).String()
	}
	return out
}
