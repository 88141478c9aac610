package remote

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var eventually = testutil.Eventually

var quiet = slog.New(slog.DiscardHandler)

// cluster is a few nodes joined through one MemNetwork.
type cluster struct {
	t     *testing.T
	net   *MemNetwork
	nodes map[string]*process.Node
	trs   map[string]*Transport

	mu    sync.Mutex
	procs []process.PID
	dead  []process.DeadLetter // every node's, in arrival order
}

// DeadLetter records the dead letters of every node of the cluster.
func (c *cluster) DeadLetter(d process.DeadLetter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = append(c.dead, d)
}

func (c *cluster) deadLetters() []process.DeadLetter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]process.DeadLetter(nil), c.dead...)
}

// newCluster starts one node per name, each with its transport, and
// stops everything at cleanup.
func newCluster(t *testing.T, names ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, net: NewMemNetwork(MemOptions{}), nodes: map[string]*process.Node{}, trs: map[string]*Transport{}}
	for _, name := range names {
		c.start(name)
	}
	t.Cleanup(c.close)
	return c
}

// start adds (or restarts) node name.
func (c *cluster) start(name string) *process.Node {
	c.t.Helper()
	n := process.NewNode(process.Options{Name: name, Logger: quiet, DeadLetters: c})
	tr, err := New(n, c.net.Endpoint(name), Options{Logger: quiet})
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[name], c.trs[name] = n, tr
	return n
}

func (c *cluster) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tr := range c.trs {
		_ = tr.Close()
	}
	c.mu.Lock()
	procs := c.procs
	c.mu.Unlock()
	for _, pid := range procs {
		if n := c.nodes[pid.Node]; n != nil {
			_, _ = n.Stop(ctx, pid)
		}
	}
	c.net.Close()
}

func (c *cluster) track(pid process.PID) {
	c.mu.Lock()
	c.procs = append(c.procs, pid)
	c.mu.Unlock()
}

// behaviorFunc adapts a function to process.Behavior.
type behaviorFunc func(ctx process.Context, m process.Message)

func (f behaviorFunc) Receive(ctx process.Context, m process.Message) { f(ctx, m) }

// spawn starts a Behavior on node.
func (c *cluster) spawn(node string, f behaviorFunc, opts process.SpawnOptions) process.PID {
	c.t.Helper()
	pid, err := c.nodes[node].Spawn(f, opts)
	if err != nil {
		c.t.Fatal(err)
	}
	c.track(pid)
	return pid
}

// echo replies to an ask with its payload.
var echo = behaviorFunc(func(ctx process.Context, m process.Message) {
	if m.CanReply() {
		ctx.Reply(&m, m.Payload, nil)
	}
})

// probe is a goroutine process that hands what it receives to channels.
type probe struct {
	pid    process.PID
	msgs   chan process.Message
	events chan process.Event
}

// spawnProbe starts a probe on node; opts may link or trap.
func (c *cluster) spawnProbe(node string, opts process.SpawnOptions) *probe {
	c.t.Helper()
	pr := &probe{msgs: make(chan process.Message, 64), events: make(chan process.Event, 64)}
	pid, err := c.nodes[node].SpawnFunc(func(p *process.Proc) (any, error) {
		// Events first, so a message sent after an event is seen after it.
		for {
			if e, ok := p.TryEvent(); ok {
				pr.events <- e
			} else if m, ok := p.TryReceive(); ok {
				pr.msgs <- m
			} else if p.Arm(); p.Pending()+p.PendingEvents() > 0 {
				p.Disarm()
			} else {
				select {
				case <-p.Context().Done():
					return nil, p.Context().Err()
				case <-p.Wake():
				}
			}
		}
	}, opts)
	if err != nil {
		c.t.Fatal(err)
	}
	pr.pid = pid
	c.track(pid)
	return pr
}

func (pr *probe) event(t *testing.T) process.Event {
	t.Helper()
	return receive(t, pr.events, pr.pid.String()+": event")
}

func (pr *probe) msg(t *testing.T) process.Message {
	t.Helper()
	return receive(t, pr.msgs, pr.pid.String()+": message")
}

// receive takes the next value from ch, failing after a generous deadline.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: none within 5s", what)
	}
	var zero T
	return zero
}

// noEvent checks that no event arrived by the time a round trip between
// the two nodes has completed (signals of one direction arrive in order).
func (c *cluster) noEvent(t *testing.T, pr *probe, via string) {
	t.Helper()
	c.roundTrip(via, pr.pid.Node)
	// The probe forwards every queued event before its next message.
	if err := c.nodes[pr.pid.Node].Send(pr.pid, process.Message{Topic: "marker"}); err != nil {
		t.Fatal(err)
	}
	if m := pr.msg(t); m.Topic != "marker" {
		t.Fatalf("%s: unexpected message %q", pr.pid, m.Topic)
	}
	select {
	case e := <-pr.events:
		t.Fatalf("%s: unexpected event %v from %s: %v", pr.pid, e.Kind, e.From, e.Exit.Err)
	default:
	}
}

// roundTrip asks an echo process on to from node from and back, so that
// every signal from sent to to before it has been handled, and every
// signal to sent back before the reply.
func (c *cluster) roundTrip(from, to string) {
	c.t.Helper()
	if from == to {
		return
	}
	e := c.spawn(from, echo, process.SpawnOptions{})
	if _, _, err := c.nodes[to].Ask(e, process.Message{Topic: "sync"}, 5*time.Second); err != nil {
		c.t.Fatalf("round trip %s -> %s: %v", to, from, err)
	}
	_ = c.nodes[from].Kill(e)
}

// exitOf returns a wait for the exit of a live local process, taken now so
// that an exit that comes early is not missed.
func exitOf(t *testing.T, n *process.Node, pid process.PID) func(*testing.T) process.Exit {
	t.Helper()
	done, exit, ok := n.Done(pid)
	if !ok {
		t.Fatalf("%s is already gone", pid)
	}
	return func(t *testing.T) process.Exit {
		t.Helper()
		select {
		case <-done:
			return exit()
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not exit within 5s", pid)
		}
		return process.Exit{}
	}
}
