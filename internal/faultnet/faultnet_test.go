package faultnet

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/remote"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sink is a remote.Network that records what it is sent.
type sink struct {
	mu     sync.Mutex
	frames []string
	closed bool
}

func (s *sink) Start(remote.Receiver) error { return nil }
func (s *sink) Close() error                { s.mu.Lock(); s.closed = true; s.mu.Unlock(); return nil }
func (s *sink) MaxFrame() int               { return 1234 }
func (s *sink) Send(node string, frame []byte) error {
	s.mu.Lock()
	s.frames = append(s.frames, node+":"+string(frame))
	s.mu.Unlock()
	return nil
}

func (s *sink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.frames)
}

// A delayed frame holds up the frames sent after it to the same node, not
// those to another; a cut fails at once; a dropped frame is gone; and the
// wrapper keeps the wrapped network's frame bound.
func TestNetworkDelaysInOrder(t *testing.T) {
	f := New()
	s := &sink{}
	nw := f.Node("a").Network(s)
	if fl, ok := nw.(remote.FrameLimiter); !ok || fl.MaxFrame() != 1234 {
		t.Fatalf("the wrapper hides the frame bound")
	}
	f.SetFrameFault(func(from, to string, frame []byte) (bool, time.Duration) {
		switch string(frame) {
		case "slow":
			return false, 200 * time.Millisecond
		case "lost":
			return true, 0
		}
		return false, 0
	})
	for _, fr := range []struct{ to, b string }{{"b", "slow"}, {"b", "after"}, {"b", "lost"}, {"c", "other"}} {
		if err := nw.Send(fr.to, []byte(fr.b)); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.got(); !slices.Equal(got, []string{"c:other"}) {
		t.Fatalf("before the delay passed: %v", got)
	}
	testutil.Eventually(t, "the held frames sent", func() bool { return len(s.got()) == 3 })
	if got := s.got(); !slices.Equal(got, []string{"c:other", "b:slow", "b:after"}) {
		t.Fatalf("sent %v", got)
	}
	f.Cut("a", "b")
	if err := nw.Send("b", []byte("x")); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send across a cut: %v", err)
	}
	f.HealAll()
	if err := nw.Send("b", []byte("healed")); err != nil {
		t.Fatal(err)
	}
	// Held frames are dropped by Close, and their goroutine ends.
	if err := nw.Send("b", []byte("slow")); err != nil {
		t.Fatal(err)
	}
	if err := nw.Close(); err != nil || !s.closed {
		t.Fatalf("close: %v, wrapped closed %v", err, s.closed)
	}
	if got := s.got(); got[len(got)-1] != "b:healed" {
		t.Fatalf("sent %v", got)
	}
}
