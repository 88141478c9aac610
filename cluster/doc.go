// Package cluster joins a node to a cluster: membership and failure
// detection on memberlist (SWIM), and a node-to-node transport of its own
// under the process core's remote seam, so PIDs of other nodes work as
// local ones.
//
// The layers, from the top:
//
//   - Cluster (Start) ties them together for one process.Node: the
//     membership reports which peers are alive and where their transport
//     listens, and the transport connects to them and reports the ones that
//     go down to the node (links and monitors fire with noconnection);
//   - Membership wraps memberlist: live members, events as they change,
//     rejoining after a partition (memberlist never does by itself), and
//     gossip messages that every subsystem shares through one delegate,
//     tagged by a Kind byte;
//   - TCPNetwork is a remote.Network: one persistent, authenticated TCP
//     connection per pair of nodes (TLS 1.3 with a secret or certificates), a bounded queue and a batching writer
//     per peer, length-prefixed frames holding wire envelopes;
//   - remote.Transport (package remote) turns the process core's signals
//     into envelopes and back.
//
// A shared secret (ReadSecretFile, DeriveKeys) yields memberlist's gossip
// key and the transport's handshake key; TLSOptions configure the
// transport's TLS (tls.go). An Interposer (Options.Interpose) wraps what
// a node reaches the network through, in both layers: tests inject
// failures with it (internal/faultnet); production code carries no fault
// hook. docs/cluster.md is the user's guide.
package cluster
