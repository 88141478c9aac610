package process

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// stopCtx is the context of a goroutine process spawned without one of
// its own (SpawnOptions.Context nil): cancelled when the process is asked
// to stop. context.WithCancel(context.Background()) made the same for 96
// bytes in two allocations, plus its Done channel; a million idle Lua
// processes hold a million of them. stopCtx is 32 bytes, makes its Done
// channel only when something waits on it (Err is an atomic load and
// makes nothing), and registers contexts derived from it with AfterFunc
// instead of a goroutine each (see context.WithCancel's afterFuncer).
type stopCtx struct {
	stopped atomic.Bool
	mu      sync.Mutex
	done    chan struct{} // made by the first Done; closed by cancel
	afters  *[]*stopAfter // AfterFunc's functions not yet run nor stopped
}

type stopAfter struct{ f func() }

var _ context.Context = (*stopCtx)(nil)

func (c *stopCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *stopCtx) Value(any) any               { return nil }

func (c *stopCtx) Err() error {
	if c.stopped.Load() {
		return context.Canceled
	}
	return nil
}

func (c *stopCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.stopped.Load() {
			close(c.done)
		}
	}
	return c.done
}

// AfterFunc runs f on its own goroutine once c is cancelled (at once when
// it is), as context.AfterFunc does; stop reports whether it stopped f
// from running.
func (c *stopCtx) AfterFunc(f func()) (stop func() bool) {
	a := &stopAfter{f: f}
	c.mu.Lock()
	if c.stopped.Load() {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if c.afters == nil {
		c.afters = new([]*stopAfter)
	}
	*c.afters = append(*c.afters, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.afters == nil {
			return false
		}
		for i, x := range *c.afters {
			if x == a {
				l := *c.afters
				l[i] = l[len(l)-1]
				l[len(l)-1] = nil
				*c.afters = l[:len(l)-1]
				return true
			}
		}
		return false
	}
}

// cancel cancels c: Err reports context.Canceled, Done is closed and the
// AfterFunc functions start. Calls after the first do nothing.
func (c *stopCtx) cancel() {
	c.mu.Lock()
	if c.stopped.Load() {
		c.mu.Unlock()
		return
	}
	c.stopped.Store(true)
	if c.done != nil {
		close(c.done)
	}
	var afters []*stopAfter
	if c.afters != nil {
		afters = *c.afters
		c.afters = nil
	}
	c.mu.Unlock()
	for _, a := range afters {
		go a.f()
	}
}
