package faultnet

import (
	"sync"
	"time"

	"github.com/proctor-run/proctor/remote"
)

// Network wraps the remote.Network the node's frames go through: a frame
// to a node it is cut from fails at once (process.ErrUnreachable), and the
// frame fault drops or delays frames. A delayed frame holds up the frames
// sent after it to the same node, as a slow connection would: they wait
// in order behind it, then go to nw.
func (n Node) Network(nw remote.Network) remote.Network {
	return &network{Network: nw, n: n, lanes: map[string]*lane{}, stop: make(chan struct{})}
}

type network struct {
	remote.Network
	n Node

	mu     sync.Mutex
	lanes  map[string]*lane // frames held behind a delayed one, per node
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

// lane holds the frames to one node that wait behind a delayed one; a
// goroutine sends them while it is not empty.
type lane struct{ held []heldFrame }

type heldFrame struct {
	b  []byte
	at time.Time
}

func (w *network) Send(node string, frame []byte) error {
	drop, delay, err := w.n.f.frameFate(w.n.name, node, frame)
	if err != nil {
		return err
	}
	if drop {
		return nil
	}
	w.mu.Lock()
	l := w.lanes[node]
	if l == nil && delay <= 0 {
		w.mu.Unlock()
		return w.Network.Send(node, frame)
	}
	if w.closed {
		w.mu.Unlock()
		return nil // lost, as on a connection that closes
	}
	if l == nil {
		l = &lane{}
		w.lanes[node] = l
		w.wg.Add(1)
		go w.drain(node, l)
	}
	l.held = append(l.held, heldFrame{b: frame, at: time.Now().Add(delay)})
	w.mu.Unlock()
	return nil
}

// drain sends the frames held for node, each no earlier than its time,
// until none is left; the lane is then removed, and frames go straight
// through again.
func (w *network) drain(node string, l *lane) {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		if len(l.held) == 0 {
			delete(w.lanes, node)
			w.mu.Unlock()
			return
		}
		f := l.held[0]
		l.held = l.held[1:]
		w.mu.Unlock()
		if d := time.Until(f.at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-w.stop:
				t.Stop()
				return
			}
		}
		// An error here is a frame lost on the way, as one a peer's
		// writer fails to write.
		_ = w.Network.Send(node, f.b)
	}
}

// MaxFrame forwards the wrapped network's bound (remote.FrameLimiter).
func (w *network) MaxFrame() int {
	if fl, ok := w.Network.(remote.FrameLimiter); ok {
		return fl.MaxFrame()
	}
	return 0
}

// Close drops the frames still held, then closes the wrapped network.
func (w *network) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
	w.mu.Unlock()
	w.wg.Wait()
	return w.Network.Close()
}
