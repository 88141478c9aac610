// Package pgscope implements the pg.scope entry kind: process groups with
// Erlang/OTP pg semantics. Processes join named groups (a process may join
// a group many times and must leave it as many times), groups exist while
// they have members, a member that exits is removed from every group once
// per join, and subscribers see member.joined / member.left events.
//
// Each scope runs a single-writer loop (process.Loop): joins, leaves,
// subscriptions and the member snapshot of a broadcast are commands it runs
// in order. Reads come from an immutable index the loop publishes through an
// atomic pointer after every change (a persistent hash trie, so a change
// costs O(log n) whatever the number of groups), so GetMembers and friends
// never lock and never wait on the loop.
//
// The loop runs as the scope's own process (process.Loop.RunProc): one
// goroutine takes the commands, the process's events (the EXITs of the
// member and subscriber processes it monitors, handled at once, whatever
// the action queue holds) and its mail (other nodes' scopes, in a
// cluster: the cluster's part, a Peering, lives on the loop too and
// applies a peer's changes where they arrive).
//
// State is kept per node and every change is diffed, so the cluster protocol
// only has to add peers: through the Replica interface (cluster.go) it
// feeds a peer's joins, leaves and full syncs to that node's share
// (ApplyJoin, ApplyLeave, ApplySync, ApplyNodeDown), and only real changes
// raise events; SubscribeLocal gives it this node's members and their
// changes to send out.
package pgscope
