//go:build !linux

package observe

import "net"

// peerWindow: only Linux tells; elsewhere a client that stops reading is
// dropped when a write to it blocks for the stall timeout.
func peerWindow(net.Conn) func() (uint32, bool) { return nil }
