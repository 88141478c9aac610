package pgdist

import (
	"sync"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
)

// itemKind tells what an item of the inbox carries.
type itemKind uint8

const (
	itemLocal    itemKind = iota + 1 // ev: a change of this node's members
	itemMessage                      // msg: from another node's scope
	itemVerified                     // node, pid (asked), from (the scope), err: a hello's answer
	itemDown                         // pid, err: a peer's scope process exited
	itemMember                       // node, up: a membership change
	itemNotice                       // node: its scope started
	itemRetry                        // node, gen: retry what the peer is owed
	itemGone                         // node: remove its members again
	itemDo                           // fn: run on the loop once everything queued before is handled; then done is closed
)

// item is one thing for the loop to do. Items are values, so the hot path
// (a local change) allocates nothing to queue one.
type item struct {
	kind itemKind
	up   bool
	node string
	pid  process.PID
	from process.PID
	err  error
	gen  uint64
	ev   pgscope.Event
	msg  process.Message
	fn   func()
	done chan struct{}
}

// inbox is the loop's queue: unbounded, so that no sender (the scope's
// loop, memberlist's goroutine, the transport) ever waits or is refused;
// the loop takes everything queued at once.
type inbox struct {
	mu    sync.Mutex
	items []item
	wake  chan struct{}
}

func (q *inbox) push(it item) {
	q.mu.Lock()
	q.items = append(q.items, it)
	n := len(q.items)
	q.mu.Unlock()
	if n == 1 {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// take swaps the queued items for buf (emptied) and returns them.
func (q *inbox) take(buf []item) []item {
	q.mu.Lock()
	out := q.items
	q.items = buf
	q.mu.Unlock()
	return out
}
