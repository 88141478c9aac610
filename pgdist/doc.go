// Package pgdist makes pg scopes (package pgscope) span a cluster: every
// node's scope of one entry holds the same groups, each node speaking for
// its own members, as Erlang/OTP's pg does.
//
// A Distributor serves every scope of a node. It implements
// pgscope.Distributor, so a pgscope.Kind that carries it attaches each
// scope it starts (at start-up or by a reload); the scope's replica then
// lives on the scope's loop, which is the scope's process: a peer's
// message is applied where it arrives, with no hand-off and no wait, and
// this node's changes go out at the end of the loop's round of work. The cluster layer comes in through the
// small Cluster interface declared here (FromCluster adapts a
// *cluster.Cluster); pgscope knows nothing of either.
//
// # The protocol
//
// A distributed scope's process is registered under the entry's ID on
// every node, so a scope reaches its peer on node N as entry@N (Erlang's
// {Scope, Node} ! Msg), over the cluster's transport: one ordered TCP
// connection per pair of nodes. Every payload is a compact binary string
// (codec.go). The messages:
//
//   - pg.ops: this node's changes (joins and leaves, in order), sent as
//     they happen to every peer: the live members and every node heard
//     from before. Changes made while the loop was busy go out together.
//   - pg.sync: this node's whole share (group to members, each repeated
//     once per join). The receiver replaces what it held of the sender by
//     it, as a diff: only real changes raise member.joined/member.left.
//   - pg.discover: a pg.sync that asks for the receiver's in return.
//   - pg.hello: an ask to entry@N; the reply comes from the process that
//     holds the name, which is how a node learns which process is N's
//     scope. Only that process speaks for N: a message from any other
//     process is dropped (a forged sync is ignored), and messages from a
//     sender not yet known are held, in order, until a hello tells (or
//     any earlier hello's answer does: they are applied before anything
//     the scope sends after).
//
// When: a scope that starts sends pg.discover to at most 4 random live
// peers, a hello to the others (to learn which run the scope), and a
// start notice to every node by gossip (the only gossip it sends; kind
// cluster.KindPGDiscover): a node with members of its own that was not
// among the 4 sends its pg.sync. When a node joins the cluster, the one
// of the two whose name sorts first sends pg.discover, so the two
// exchange their states once. Every anti_entropy_interval one peer in
// turn gets a pg.sync (a peer known to be behind first). A peer's scope
// that stops (its process exits) takes its members with it; a node that
// leaves the cluster or fails (MemberLeft) does too. A broken connection
// (the peer's scope process is monitored: noconnection) loses what was in
// flight both ways, so the two exchange their states again; the members
// stay until the membership says the node is gone.
//
// Sends to a peer pass its circuit breaker (circuit_breaker_failures,
// circuit_breaker_reset_time, one half-open probe). A change that cannot
// be sent, or that an open breaker skips, leaves the peer owed the whole
// state, retried with exponential backoff (retry_base_delay doubling to
// retry_max_delay, max_retries times); the next change, a membership
// change or anti-entropy tries again after that. Changes are not sent to
// a peer that is owed the whole state: it carries them.
//
// The full syncs travel over the transport rather than as gossip because
// a gossip payload is at most 1,024 bytes; gossip carries only the start
// notice, which fits and must reach nodes this one does not yet talk to.
//
// The payloads are this package's own encoding (codec.go), carried as a
// string in the transport's envelope (remote/wire, whose version covers
// the envelope): the protocol's version byte is its own, 1, and the
// changes of this package left both formats as they were, so nodes of
// either build interoperate.
package pgdist
