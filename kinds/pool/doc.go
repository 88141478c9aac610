// Package pool implements the two router kinds.
//
// router.pool (Pool) spawns and owns its routees (instances of a
// process.lua entry, or any Template entry), supervises them, and routes
// every message it receives by one strategy: round_robin, random,
// smallest_mailbox, broadcast, consistent_hash,
// scatter_gather_first_completed or tail_chopping. Two resizers, ports of
// Akka's DefaultResizer and DefaultOptimalSizeExploringResizer, grow and
// shrink the pool.
//
// router.group (Group) is the group-shaped router: its routees are the
// current members of a pg group (kinds/pgscope), on any node. It owns no
// routees and has no loop: it reads the scope's published list of distinct
// members, which the scope computes once per change of the group, so
// routing a message copies nothing. Its strategies are those of a pool
// that make sense without owning the routees: round_robin, random,
// broadcast, consistent_hash (a ring over member PIDs, so every node sends
// a key to the same member) and scatter_gather_first_completed.
//
// Both route through one function (core.route in route.go): one strategy
// switch, one broadcast loop, one retry past a routee that just exited.
//
// Concurrency. A pool is a Behavior process (its PID is the entry's PID,
// so process.send and process.ask to it route too). That process is the
// single writer of the pool's state: routee slots, restarts, resizes and
// retiring routees change only on its goroutine, through commands it is
// sent (process.RunOnAs; Context.Owner). Senders never wait on it: Tell and Ask route on the
// caller's goroutine against an immutable snapshot of the routees published
// through an atomic pointer, the way Akka routes on the sender's thread.
// A scatter or tail chop (race.go) is the reply target of its own asks,
// with one deadline timer, so no request holds the pool's loop and
// hundreds of them overlap.
//
// A removed routee (a resize down) leaves the routing snapshot first, then
// finishes what its mailbox holds, and is terminated only once it is idle:
// a resize never drops a message a routee had accepted.
package pool
