package process

import (
	"sync/atomic"
	"time"
)

// A goroutine process that is killed is gone from the node at once, but
// its goroutine can only return by itself: Go cannot stop it. A goroutine
// that does not return soon after its context is cancelled is stuck (in a
// Go call that never looks at the context) and keeps its memory and
// perhaps a core. It must not go unnoticed: it is reported as abandoned,
// with a log line and a count the runtime exports as a metric, and its
// return, if it ever comes, is logged too.

// DefaultAbandonAfter is the default of Options.AbandonAfter.
const DefaultAbandonAfter = time.Second

// States of a goroutine process's function (procExt.run).
const (
	runStarted   int32 = iota + 1 // fn is running
	runReturned                   // fn returned
	runAbandoned                  // killed, and fn had not returned AbandonAfter later
)

// AbandonStats counts the processes abandoned on a node.
type AbandonStats struct {
	// Total is the number of processes reported abandoned since the node
	// started.
	Total int64
	// Running is how many of their goroutines still run.
	Running int64
}

// Abandoned returns the node's abandon counts.
func (n *Node) Abandoned() AbandonStats {
	return AbandonStats{Total: n.abandonTotal.Load(), Running: n.abandonRunning.Load()}
}

// watchAbandon reports p as abandoned when its goroutine has not returned
// AbandonAfter after it was killed.
func (n *Node) watchAbandon(p *process) {
	x := p.ext.Load()
	if x == nil || x.run.Load() != runStarted {
		return
	}
	time.AfterFunc(n.abandonAfter, func() {
		if x.run.CompareAndSwap(runStarted, runAbandoned) {
			// Log before counting: whoever sees the count sees the line.
			n.log.Error("process abandoned: killed, but its goroutine has not returned; it runs on outside the node",
				"pid", p.pid.String(), "waited", n.abandonAfter.String())
			n.abandonTotal.Add(1)
			n.abandonRunning.Add(1)
		}
	})
}

// returned records that p's function returned, and logs it when p had
// been reported abandoned.
func (n *Node) returned(p *process, run *atomic.Int32) {
	if run.CompareAndSwap(runStarted, runReturned) {
		return
	}
	if run.CompareAndSwap(runAbandoned, runReturned) {
		n.log.Warn("abandoned process's goroutine returned at last", "pid", p.pid.String())
		n.abandonRunning.Add(-1)
	}
}
