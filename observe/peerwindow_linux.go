package observe

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerWindow returns a function that reads the receive window the peer of
// c last advertised (TCP_INFO's tcpi_snd_wnd): what its receive buffer
// still takes. A client that reads keeps it at its largest; one that stopped
// reading sees it shrink by every byte it is sent, and never grow back.
// nil when c is not a TCP connection.
func peerWindow(c net.Conn) func() (uint32, bool) {
	for {
		u, ok := c.(interface{ Unwrap() net.Conn })
		if !ok {
			break
		}
		c = u.Unwrap()
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return func() (uint32, bool) {
		var w uint32
		var ok bool
		_ = raw.Control(func(fd uintptr) {
			if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				w, ok = ti.Snd_wnd, true
			}
		})
		return w, ok
	}
}
