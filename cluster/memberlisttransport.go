package cluster

import (
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// StreamsShed counts memberlist streams closed at once: a StreamLimits
// bound was reached.
func (m *Membership) StreamsShed() uint64 { return m.tr.guard.shed.Load() }

// faultTransport is memberlist's network transport with the stream guard
// in front of what others open (StreamLimits) and the fault layer in front
// of what this node sends.
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

func (t *faultTransport) fate(name, addr string) (drop bool, delay time.Duration) {
	f := t.m.cfg.faults
	if f == nil {
		return false, 0
	}
	if name == "" {
		name = t.m.nameOf(addr)
	}
	return f.packetFate(t.m.cfg.name, name)
}

func (t *faultTransport) send(b []byte, a memberlist.Address) (time.Time, error) {
	drop, delay := t.fate(a.Name, a.Addr)
	switch {
	case drop:
		return time.Now(), nil
	case delay > 0:
		b = slices.Clone(b)
		time.AfterFunc(delay, func() { _, _ = t.NodeAwareTransport.WriteToAddress(b, a) })
		return time.Now(), nil
	}
	return t.NodeAwareTransport.WriteToAddress(b, a)
}

func (t *faultTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.send(b, memberlist.Address{Addr: addr})
}

func (t *faultTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.send(b, a)
}

func (t *faultTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

func (t *faultTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	name := a.Name
	if name == "" {
		name = t.m.nameOf(a.Addr)
	}
	if t.m.cfg.faults.isCut(t.m.cfg.name, name) {
		return nil, errors.New("cut by a fault")
	}
	c, err := t.NodeAwareTransport.DialAddressTimeout(a, timeout)
	if err != nil {
		return nil, err
	}
	return t.guard.outbound(c), nil
}

// knownHost reports whether host is the IP of a node this one knows (live
// or not): its streams are a member's, not a stranger's.
func (m *Membership) knownHost(host string) bool {
	for _, mem := range *m.known.Load() {
		if h, _, err := net.SplitHostPort(mem.Gossip); err == nil && h == host {
			return true
		}
	}
	return false
}
