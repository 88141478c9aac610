// Package pool implements the router.pool kind: a pool that spawns and owns
// its routees (instances of a process.lua entry, or any Template entry),
// supervises them, and routes every message it receives by one strategy:
// round_robin, random, smallest_mailbox, broadcast, consistent_hash,
// scatter_gather_first_completed or tail_chopping. Two resizers, ports of
// Akka's DefaultResizer and DefaultOptimalSizeExploringResizer, grow and
// shrink the pool.
//
// Concurrency. The pool is a Behavior process (its PID is the entry's PID,
// so process.send and process.ask to it route too). That process is the
// single writer of the pool's state: routee slots, restarts, resizes and
// retiring routees change only on its goroutine, through control messages
// sent to itself. Senders never wait on it: Tell and Ask route on the
// caller's goroutine against an immutable snapshot of the routees published
// through an atomic pointer, the way Akka routes on the sender's thread.
// Scatters and tail chops run on process.Node.AskFunc callbacks, so no
// request holds the pool's loop and hundreds of them overlap.
//
// A removed routee (a resize down) leaves the routing snapshot first, then
// finishes what its mailbox holds, and is terminated only once it is idle:
// a resize never drops a message a routee had accepted.
package pool
