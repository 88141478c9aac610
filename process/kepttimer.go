package process

import (
	"runtime"
	"sync"
	"time"
	"weak"
)

// keptTimer is the timer of a pooled call record (a Call's askRef, a
// RunOn waiter): it stays set across the calls that reuse the record,
// since a timer's Reset and Stop per call (each locks it and the heap of
// timers it sits in) were a large part of a call's cost. A call only
// makes sure it fires early enough (setBy); when it fires, its owner
// times out the call in progress if that call's deadline has passed, and
// otherwise sets it again for that deadline. A call that set it beyond
// farArm stops it as its record is released (releaseFar), so a record
// the pool lets go is not held by a timer set for decades.
type keptTimer struct {
	mu    sync.Mutex  // orders the setting of t; the owner guards its deadline with it too
	t     *time.Timer // fires the owner's expire; made once per pooled record
	armed bool        // guarded by mu: t is set, for when
	when  int64       // guarded by mu; since epoch
	far   bool        // the caller's: t may be set beyond farArm
}

// farArm bounds how long a released record's timer stays set: a wait
// longer than this stops the timer when it ends (releaseFar).
const farArm = time.Minute

// initKeptTimer makes owner's timer k, unset, to call expire on owner
// when it fires. The timer holds owner weakly: a timer stays set after
// the call that set it (up to farArm), and one that held its record
// kept every record the pool let go alive until it fired, with the
// timer in the runtime's heap of timers — at 60,000 asks a second, about
// 600 records a second for as long as a route's timeout, scanned by
// every collection meanwhile. Once owner is collected, its timer is
// stopped (a cleanup); one that fires before that finds no owner.
func initKeptTimer[T any](k *keptTimer, owner *T, expire func(*T)) {
	wp := weak.Make(owner)
	k.t = time.AfterFunc(time.Hour, func() {
		if o := wp.Value(); o != nil {
			expire(o)
		}
	})
	k.t.Stop()
	runtime.AddCleanup(owner, func(t *time.Timer) { t.Stop() }, k.t)
}

// setBy makes sure the timer fires by due (since epoch; now is the time
// read by the caller). k.mu is held.
func (k *keptTimer) setBy(due, now int64) {
	if !k.armed || k.when > due {
		k.t.Reset(time.Duration(due - now))
		k.armed, k.when = true, due
	}
}

// stop unsets the timer. k.mu is held.
func (k *keptTimer) stop() {
	if k.armed {
		k.t.Stop()
		k.armed = false
	}
}

// markFar notes a wait until due that ends beyond farArm from now: its
// record's release stops the timer. Called by the record's caller.
func (k *keptTimer) markFar(due, now int64) {
	if due-now > int64(farArm) {
		k.far = true
	}
}

// releaseFar stops the timer if a wait beyond farArm set it, as the
// record goes back to the pool. Called by the record's caller.
func (k *keptTimer) releaseFar() {
	if k.far {
		k.far = false
		k.mu.Lock()
		k.stop()
		k.mu.Unlock()
	}
}
