package remote

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// MemNetwork is an in-memory Network for tests, in the manner of
// memberlist's MockNetwork: several nodes of one program, each with an
// endpoint, exchange frames through it. Each direction between two nodes
// is a queue drained by a goroutine of its own, so delivery is ordered per
// direction and asynchronous, as over a connection. Faults can be
// injected: a direction cut, frames dropped or delayed (SetFault), a node
// reported down to one observer or to all (ReportDown, Down).
//
// Close stops every goroutine the network started.
type MemNetwork struct {
	queueSize int
	maxFrame  int

	mu     sync.Mutex
	nodes  map[string]*MemEndpoint
	pairs  map[pairKey]*memPair
	cut    map[pairKey]bool
	fault  Fault
	closed bool
}

// Fault decides the fate of one frame from one node to another: dropped
// silently, or delivered after delay. A delayed frame holds up the frames
// sent after it in the same direction, as a slow connection would. frame
// is valid during the call only: its buffer is reused once delivered.
type Fault func(from, to string, frame []byte) (drop bool, delay time.Duration)

// MemOptions configure a MemNetwork. The zero value is usable.
type MemOptions struct {
	// QueueSize bounds the frames queued in one direction between two
	// nodes; a Send past it is ErrQueueFull. Default: 65536.
	QueueSize int
	// MaxFrame bounds a frame, as a network over connections does; a
	// larger one is refused with value.ErrTooLarge. Default: no bound.
	MaxFrame int
}

type pairKey struct{ from, to string }

// NewMemNetwork returns an empty network.
func NewMemNetwork(opts MemOptions) *MemNetwork {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 1 << 16
	}
	return &MemNetwork{
		queueSize: opts.QueueSize,
		maxFrame:  opts.MaxFrame,
		nodes:     make(map[string]*MemEndpoint),
		pairs:     make(map[pairKey]*memPair),
		cut:       make(map[pairKey]bool),
	}
}

// Endpoint returns the Network of the node named name. It joins the
// network when a transport starts it.
func (n *MemNetwork) Endpoint(name string) *MemEndpoint {
	return &MemEndpoint{net: n, name: name}
}

// SetFault installs f (nil removes it); it applies to frames sent from now on.
func (n *MemNetwork) SetFault(f Fault) {
	n.mu.Lock()
	n.fault = f
	n.mu.Unlock()
}

// Cut makes every Send from from to to fail at once with
// process.ErrUnreachable, until Heal. Frames already queued still arrive.
// Nobody is told a node is down: call ReportDown for that, as failure
// detection would.
func (n *MemNetwork) Cut(from, to string) {
	n.mu.Lock()
	n.cut[pairKey{from, to}] = true
	n.mu.Unlock()
}

// Heal undoes Cut.
func (n *MemNetwork) Heal(from, to string) {
	n.mu.Lock()
	delete(n.cut, pairKey{from, to})
	n.mu.Unlock()
}

// ReportDown tells observer that node is down, as failure detection on
// observer would: frames from node to observer still queued are lost, and
// observer's NodeDown(node) is called after the last frame it received
// from node. Later frames flow again (a healed partition).
func (n *MemNetwork) ReportDown(observer, node string) {
	n.mu.Lock()
	p := n.pairLocked(node, observer)
	n.mu.Unlock()
	if p != nil {
		p.push(memFrame{down: true}, true)
	}
}

// Down takes node off the network, as a crash would: its endpoint is
// gone, every other node is told it is down, and it is told every other
// node is down. Frames still queued to or from it are lost. Down returns
// once all of these reports are delivered; it must not be called from a
// Receiver. A new endpoint of the same name may join afterwards (a
// restart).
func (n *MemNetwork) Down(node string) {
	n.mu.Lock()
	e := n.nodes[node]
	if e == nil {
		n.mu.Unlock()
		return
	}
	var retired []*memPair
	for other := range n.nodes {
		if other == node {
			continue
		}
		for _, k := range [2]pairKey{{node, other}, {other, node}} {
			if p := n.pairLocked(k.from, k.to); p != nil {
				retired = append(retired, p)
			}
			delete(n.pairs, k)
		}
	}
	delete(n.nodes, node)
	n.mu.Unlock()
	for _, p := range retired {
		p.push(memFrame{down: true, last: true}, true)
	}
	for _, p := range retired {
		<-p.done
	}
}

// Close stops the network: every queue is dropped and its goroutine ends.
func (n *MemNetwork) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	pairs := n.pairs
	n.pairs = map[pairKey]*memPair{}
	n.nodes = map[string]*MemEndpoint{}
	n.mu.Unlock()
	for _, p := range pairs {
		close(p.quit)
		p.stop()
	}
	for _, p := range pairs {
		<-p.done
	}
}

// pairLocked returns the queue from -> to, starting it; nil when either
// node is not on the network. n.mu is held.
func (n *MemNetwork) pairLocked(from, to string) *memPair {
	k := pairKey{from, to}
	if p := n.pairs[k]; p != nil {
		return p
	}
	dst := n.nodes[to]
	if n.closed || dst == nil || n.nodes[from] == nil {
		return nil
	}
	p := &memPair{
		from: from, to: dst, max: n.queueSize, q: process.NewQueue[memFrame](n.queueSize),
		quit: make(chan struct{}), done: make(chan struct{}),
	}
	n.pairs[k] = p
	go p.run()
	return p
}

func (n *MemNetwork) send(src *MemEndpoint, to string, frame []byte) error {
	if n.maxFrame > 0 && len(frame) > n.maxFrame {
		return fmt.Errorf("node %q: %w: a frame of %d bytes (at most %d)", to, value.ErrTooLarge, len(frame), n.maxFrame)
	}
	n.mu.Lock()
	if n.nodes[src.name] != src {
		n.mu.Unlock()
		return fmt.Errorf("node %s: %w: it is off the network", src.name, process.ErrUnreachable)
	}
	if n.cut[pairKey{src.name, to}] {
		n.mu.Unlock()
		return fmt.Errorf("node %s: %w: connection cut", to, process.ErrUnreachable)
	}
	p := n.pairLocked(src.name, to)
	fault := n.fault
	n.mu.Unlock()
	if p == nil {
		return fmt.Errorf("node %q: %w: not on the network", to, process.ErrUnreachable)
	}
	f := memFrame{b: frame}
	if fault != nil {
		drop, delay := fault(src.name, to, frame)
		if drop {
			ReleaseFrame(frame)
			return nil
		}
		if delay > 0 {
			f.at = int64(time.Since(memEpoch) + delay)
		}
	}
	if !p.push(f, false) {
		return fmt.Errorf("node %s: %w (%d frames)", to, ErrQueueFull, p.max)
	}
	return nil
}

// MemEndpoint is one node's Network on a MemNetwork.
type MemEndpoint struct {
	net  *MemNetwork
	name string
	recv Receiver
}

var _ Network = (*MemEndpoint)(nil)

// Name returns the endpoint's node name.
func (e *MemEndpoint) Name() string { return e.name }

// Start implements Network: the node joins the network.
func (e *MemEndpoint) Start(r Receiver) error {
	n := e.net
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.closed:
		return fmt.Errorf("node %s: the network is closed", e.name)
	case e.recv != nil:
		return fmt.Errorf("node %s: endpoint already started", e.name)
	case n.nodes[e.name] != nil:
		return fmt.Errorf("node %s: a node of that name is on the network", e.name)
	}
	e.recv = r
	n.nodes[e.name] = e
	return nil
}

// Send implements Network.
func (e *MemEndpoint) Send(node string, frame []byte) error { return e.net.send(e, node, frame) }

// MaxFrame implements FrameLimiter: MemOptions.MaxFrame, 0 for no bound.
func (e *MemEndpoint) MaxFrame() int { return e.net.maxFrame }

// Close implements Network: the node leaves the network (Down).
func (e *MemEndpoint) Close() error {
	e.net.mu.Lock()
	on := e.net.nodes[e.name] == e
	e.net.mu.Unlock()
	if on {
		e.net.Down(e.name)
	}
	return nil
}

// memFrame is one queued frame, or a down report. It is kept small (48
// bytes): a queue's chunk holds 64 of them and is cleared as it is reused.
type memFrame struct {
	b     []byte
	at    int64  // deliver no earlier (a delay fault): monotonic ns since memEpoch; 0 for none
	epoch uint64 // the pair's epoch when it was queued
	down  bool   // report the sender down instead
	last  bool   // and end the queue (Down; alone: Close)
}

// memPair is the queue of one direction between two nodes.
type memPair struct {
	from string
	to   *MemEndpoint
	max  int
	q    *process.Queue[memFrame]

	// epoch counts the down reports queued: a frame queued before the
	// latest is discarded on its way out, as a report discards what is
	// queued before it.
	reportMu sync.Mutex // orders the reports' epochs as they are queued
	epoch    atomic.Uint64

	quit chan struct{}
	done chan struct{}
}

// push queues f; a down report discards what is queued first, and is
// never refused for the queue's bound. It reports false when the queue is
// full or ended.
func (p *memPair) push(f memFrame, report bool) bool {
	if !report {
		f.epoch = p.epoch.Load()
		return p.q.Push(f) == nil
	}
	p.reportMu.Lock()
	defer p.reportMu.Unlock()
	f.epoch = p.epoch.Add(1)
	if p.q.PushOver(f) != nil {
		return false
	}
	if f.last {
		p.q.Close()
	}
	return true
}

// stop ends the queue for Close: what is queued is discarded, as a down
// report discards it, and the goroutine returns at the end mark. The
// goroutine waits on the queue alone (a plain receive, as a connection's
// writer would), so the end comes through the queue too.
func (p *memPair) stop() {
	p.push(memFrame{last: true}, true)
}

func (p *memPair) run() {
	defer close(p.done)
	for {
		f, ok := p.q.Pop()
		if !ok {
			<-p.q.Ready()
			continue
		}
		if f.epoch < p.epoch.Load() {
			ReleaseFrame(f.b)
			continue // queued before a down report
		}
		if f.last && !f.down {
			return // Close
		}
		if f.at != 0 && !p.wait(f.at) {
			return
		}
		if f.down {
			p.to.recv.NodeDown(p.from)
			if f.last {
				return
			}
			continue
		}
		// A refused frame is counted and logged by the receiver; a
		// connection would be closed, here there is none.
		_ = p.to.recv.Receive(p.from, f.b)
		ReleaseFrame(f.b) // the Receiver keeps nothing of it
	}
}

// memEpoch is the origin of memFrame.at.
var memEpoch = time.Now()

// wait sleeps until at; false when the network closed meanwhile.
func (p *memPair) wait(at int64) bool {
	d := time.Duration(at) - time.Since(memEpoch)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.quit:
		return false
	}
}
