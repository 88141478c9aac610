package remote

import (
	"fmt"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// A small frame's buffer comes back to the pool once its network has
// delivered it: sending one allocates no frame.
func TestSmallFrameBuffersAreReused(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	allocs := testing.AllocsPerRun(100, func() {
		b := append(frameBuf(100), "a frame"...)
		ReleaseFrame(b)
	})
	if allocs != 0 {
		t.Fatalf("a pooled frame costs %v allocations", allocs)
	}
	if b := frameBuf(frameBufSize + 1); cap(b) == frameBufSize {
		t.Fatal("a large frame came from the pool")
	}
	// A frame that is not the pool's size is left alone.
	ReleaseFrame(make([]byte, 10, 100))
}

// Frames are reused only once delivered: messages that overtake each
// other's buffers (many in flight, each received before the next is
// built from a released buffer) all arrive as they were sent.
func TestReusedFramesArriveIntact(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	pr := c.spawnProbe("n2", process.SpawnOptions{})
	const n = 2000
	go func() {
		for i := range n {
			// Payloads of varying length, so that a reused buffer
			// holding a longer frame's tail would show.
			m := process.Message{Topic: "t", Payload: fmt.Sprintf("%d:%0*d", i, i%50, i)}
			if err := c.nodes["n1"].Send(pr.pid, m); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := range n {
		select {
		case m := <-pr.msgs:
			if want := fmt.Sprintf("%d:%0*d", i, i%50, i); m.Payload != want {
				t.Fatalf("message %d: %v, want %q", i, m.Payload, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("message %d never arrived", i)
		}
	}
}
