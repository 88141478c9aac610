package remote

import "github.com/proctor-run/proctor/value"

// Network moves frames between this node and the others: the byte-moving
// part under a Transport. One frame holds one envelope.
type Network interface {
	// Start begins delivering this node's frames and node-down reports
	// to r. New calls it once, before any Send.
	Start(r Receiver) error
	// Send queues frame for node and returns at once; the network owns
	// frame from then on, and may hand it back with ReleaseFrame once it
	// has written or delivered it. Frames to one node arrive in the order
	// they were sent. A node that is unknown or down is an error wrapping
	// process.ErrUnreachable; a full queue, one wrapping ErrQueueFull.
	Send(node string, frame []byte) error
	// Close leaves the network: the other nodes see this one go down, and
	// once Close returns, nothing more is delivered to the Receiver.
	Close() error
}

// A FrameLimiter is a Network that bounds the frames it carries: the
// Transport encodes each envelope for it with that budget, so an envelope
// too large to send fails (value.ErrTooLarge, of kind limit) as soon as
// its encoding passes the bound, before it is built whole.
type FrameLimiter interface {
	// MaxFrame is the largest frame Send accepts, in bytes.
	MaxFrame() int
}

// Receiver is what a Network delivers to (a Transport).
type Receiver interface {
	// Receive handles one frame from node. Frames from one node arrive in
	// the order node sent them, one at a time; frames from different
	// nodes may arrive concurrently. Receive never blocks and does not
	// keep frame. An error means the frame was malformed or forged: a
	// network over a connection should close that connection.
	Receive(node string, frame []byte) error
	// NodeDown reports that node is gone. The network calls it after the
	// last Receive from node, and Sends to node fail until it is back.
	NodeDown(node string)
}

// Errors of the remote layer.
var (
	// ErrQueueFull: the queue of frames to a node is full.
	ErrQueueFull = value.Sentinel("remote.queue_full", value.KindLimit, "send queue to the node is full")
	// ErrTooManyPending: too many asks already await replies from other
	// nodes (Options.MaxPending).
	ErrTooManyPending = value.Sentinel("remote.too_many_pending", value.KindLimit, "too many asks awaiting replies from other nodes")
	// ErrForged: a frame named a process of another node than the one it
	// came from, or was otherwise not what its sender may send.
	ErrForged = value.Sentinel("remote.forged", value.KindInvalid, "frame names processes its sender does not own")
)
