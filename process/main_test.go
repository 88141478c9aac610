package process

import (
	"log/slog"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// behaviorFunc adapts a function to Behavior.
type behaviorFunc func(c Context, m Message)

func (f behaviorFunc) Receive(c Context, m Message) { f(c, m) }

// echo replies to every ask with its payload.
var echo = behaviorFunc(func(c Context, m Message) {
	if m.CanReply() {
		c.Reply(&m, m.Payload, nil)
	}
})

// collector is a goroutine process that forwards what it receives to Go
// channels, so tests can observe messages and events.
type collector struct {
	pid    PID
	msgs   chan Message
	events chan Event
}

func spawnCollector(t *testing.T, n *Node, opts SpawnOptions) *collector {
	t.Helper()
	c := &collector{msgs: make(chan Message, 1024), events: make(chan Event, 1024)}
	pid, err := n.SpawnFunc(func(p *Proc) (any, error) {
		for {
			for {
				e, ok := p.TryEvent()
				if !ok {
					break
				}
				c.events <- e
			}
			if m, ok := p.TryReceive(); ok {
				c.msgs <- m
				continue
			}
			p.Arm()
			if p.Pending() > 0 || p.PendingEvents() > 0 {
				p.Disarm()
				continue
			}
			select {
			case <-p.Wake():
			case <-p.Context().Done():
				return nil, p.Context().Err()
			}
		}
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	c.pid = pid
	t.Cleanup(func() { n.Kill(pid) })
	return c
}

func (c *collector) event(t *testing.T) Event {
	t.Helper()
	select {
	case e := <-c.events:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event arrived")
		return Event{}
	}
}

func (c *collector) noEvent(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case e := <-c.events:
		t.Fatalf("unexpected event %v from %s", e.Kind, e.From)
	case <-time.After(within):
	}
}

func newTestNode() *Node {
	return NewNode(Options{Name: "test", Logger: slog.New(slog.DiscardHandler)})
}

// Shared helpers (internal/testutil).
var eventually = testutil.Eventually
