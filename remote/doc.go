// Package remote carries the process core's signals between nodes: it
// implements process.Transport on top of a Network that moves frames, and
// hands what arrives to process.Inbound.
//
// The layers, from the top:
//
//   - process.Node routes what it addresses to other nodes' PIDs to its
//     Transport (Node.SetTransport) and takes what peers send through its
//     Inbound;
//   - Transport (this package) turns each signal into an envelope (package
//     remote/wire), keeps the table of asks awaiting a reply from another
//     node (keyed by a token, expired at the ask's deadline, failed with
//     process.ErrNoConnection when the node goes down), and checks that
//     what a peer sends names only that peer's processes;
//   - Network moves frames to named nodes and reports nodes down. MemNetwork
//     is the in-memory one, for tests; the cluster puts TCP (framing,
//     handshake, a writer queue per peer) and membership under the same
//     interface.
//
// The process package never imports this one.
package remote
