package cluster

import (
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// StreamsShed counts memberlist streams closed at once: a StreamLimits
// bound was reached.
func (m *Membership) StreamsShed() uint64 { return m.tr.guard.shed.Load() }

// faultTransport is memberlist's network transport (as Interpose.Gossip
// wraps it) with the stream guard in front of what others open
// (StreamLimits) and on what this node opens.
type faultTransport struct {
	memberlist.NodeAwareTransport
	m       *Membership
	guard   *streamGuard
	streams chan net.Conn // admitted inbound streams
	stop    chan struct{}
	halt    sync.Once
	wg      sync.WaitGroup
}

// StreamCh returns the inbound streams the guard admitted.
func (t *faultTransport) StreamCh() <-chan net.Conn { return t.streams }

// run starts the guard; Shutdown stops it.
func (t *faultTransport) run() {
	t.wg.Add(1)
	go t.guardStreams()
}

func (t *faultTransport) guardStreams() {
	defer t.wg.Done()
	for {
		select {
		case c := <-t.NodeAwareTransport.StreamCh():
			gc, ok := t.guard.admit(c)
			if !ok {
				continue
			}
			select {
			case t.streams <- gc:
			case <-t.stop:
				gc.Close()
				return
			}
		case <-t.stop:
			return
		}
	}
}

// Shutdown stops the network transport, then the guard: the guard takes
// what the transport accepts until it has stopped (its listener blocks on
// handing a connection over).
func (t *faultTransport) Shutdown() error {
	err := t.NodeAwareTransport.Shutdown()
	t.halt.Do(func() { close(t.stop) })
	t.wg.Wait()
	return err
}

func (t *faultTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

func (t *faultTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	c, err := t.NodeAwareTransport.DialAddressTimeout(a, timeout)
	if err != nil {
		return nil, err
	}
	return t.guard.outbound(c), nil
}

// knownHost counts the nodes this one knows (live or not) whose gossip
// address is on host.
func (m *Membership) knownHost(host string) int {
	n := 0
	for _, mem := range *m.known.Load() {
		if h, _, err := net.SplitHostPort(mem.Gossip); err == nil && h == host {
			n++
		}
	}
	return n
}
