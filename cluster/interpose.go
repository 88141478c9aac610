package cluster

import (
	"context"
	"net"

	"github.com/hashicorp/memberlist"

	"github.com/proctor-run/proctor/remote"
)

// An Interposer wraps what a node reaches the network through: the
// transport's listener and dialer, the remote.Network the node's frames
// go through, and memberlist's transport. Tests inject network failures
// with one (internal/faultnet); a node without one (Options.Interpose nil)
// runs on the operating system's network as it is.
type Interposer interface {
	// Listen and Dial replace net.Listen and a net.Dialer for the
	// transport's connections (TCPOptions.ListenFunc and DialContext).
	Listen(network, addr string) (net.Listener, error)
	Dial(ctx context.Context, network, addr string) (net.Conn, error)
	// Network wraps the network the remote transport sends through.
	Network(remote.Network) remote.Network
	// Gossip wraps memberlist's transport.
	Gossip(memberlist.NodeAwareTransport) memberlist.NodeAwareTransport
}
