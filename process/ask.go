package process

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// askResult is what settles an ask.
type askResult struct {
	value any
	from  PID
	err   error
}

// askRef is the one-shot reply reference of a blocking ask. Refs are
// pooled; state holds the current ask's token (even) or token+1 once
// settled, so a late reply to an earlier ask on the same ref fails its
// compare-and-swap and is dropped.
type askRef struct {
	state atomic.Uint64
	ch    chan askResult
	timer *time.Timer
}

var askPool = sync.Pool{New: func() any {
	r := &askRef{ch: make(chan askResult, 1), timer: time.NewTimer(time.Hour)}
	r.timer.Stop()
	return r
}}

func (r *askRef) Settle(token uint64, from PID, v any, err error) bool {
	if !r.state.CompareAndSwap(token, token+1) {
		return false
	}
	r.ch <- askResult{value: v, from: from, err: err}
	return true
}

// Ask sends m to to and waits for its reply at most timeout (0 means
// DefaultAskTimeout). It returns the reply and the PID of the process that
// replied. Failures: a send error at once, the replier's error, or
// ErrTimeout when the deadline passes first.
func (n *Node) Ask(to PID, m Message, timeout time.Duration) (any, PID, error) {
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	r := askPool.Get().(*askRef)
	token := r.state.Load() + 2
	token &^= 1
	r.state.Store(token)
	if err := n.Send(to, m.WithReply(r, token)); err != nil {
		// Nobody can settle it; retire the token so the ref stays clean.
		r.state.Store(token + 1)
		askPool.Put(r)
		return nil, PID{}, err
	}
	r.timer.Reset(timeout)
	select {
	case res := <-r.ch:
		r.timer.Stop()
		askPool.Put(r)
		return res.value, res.from, res.err
	case <-r.timer.C:
		if !r.state.CompareAndSwap(token, token+1) {
			// A reply won the race with the clock; take it.
			res := <-r.ch
			askPool.Put(r)
			return res.value, res.from, res.err
		}
		askPool.Put(r)
		return nil, PID{}, fmt.Errorf("ask %s after %s: %w", to, timeout, ErrTimeout)
	}
}

// funcRef settles an asynchronous ask by calling its callback once.
type funcRef struct {
	done  atomic.Bool
	timer atomic.Pointer[time.Timer]
	fn    func(v any, from PID, err error)
}

func (r *funcRef) Settle(_ uint64, from PID, v any, err error) bool {
	if !r.done.CompareAndSwap(false, true) {
		return false
	}
	if t := r.timer.Load(); t != nil {
		t.Stop()
	}
	r.fn(v, from, err)
	return true
}

// AskFunc sends m to to as an ask and returns at once; fn is called exactly
// once, with the reply, the replier's error, a send error or ErrTimeout,
// on whichever goroutine settles the ask. It lets a loop fan out many asks
// without blocking or holding a goroutine per ask.
func (n *Node) AskFunc(to PID, m Message, timeout time.Duration, fn func(v any, from PID, err error)) {
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	r := &funcRef{fn: fn}
	r.timer.Store(time.AfterFunc(timeout, func() {
		r.Settle(0, PID{}, nil, fmt.Errorf("ask %s after %s: %w", to, timeout, ErrTimeout))
	}))
	if err := n.Send(to, m.WithReply(r, 0)); err != nil {
		r.Settle(0, PID{}, nil, err)
	}
}
