package remote

import (
	"errors"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// Cut refuses one direction only, at once, until Heal.
func TestMemNetworkCut(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	a := c.spawnProbe("n1", process.SpawnOptions{})
	b := c.spawnProbe("n2", process.SpawnOptions{})
	c.net.Cut("n1", "n2")
	if err := c.nodes["n1"].Send(b.pid, process.Message{}); !errors.Is(err, process.ErrUnreachable) {
		t.Fatalf("send over a cut: %v", err)
	}
	if err := c.nodes["n2"].Send(a.pid, process.Message{Topic: "back"}); err != nil {
		t.Fatalf("the other direction: %v", err)
	}
	if m := a.msg(t); m.Topic != "back" {
		t.Fatalf("message = %+v", m)
	}
	c.net.Heal("n1", "n2")
	if err := c.nodes["n1"].Send(b.pid, process.Message{Topic: "healed"}); err != nil {
		t.Fatal(err)
	}
	if m := b.msg(t); m.Topic != "healed" {
		t.Fatalf("message = %+v", m)
	}
}

// ReportDown is one node's view: its relations with the other fire, the
// other node hears nothing, and frames flow again afterwards.
func TestMemNetworkReportDown(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	w := c.spawnProbe("n1", process.SpawnOptions{})
	target := c.spawnProbe("n2", process.SpawnOptions{})
	watcher2 := c.spawnProbe("n2", process.SpawnOptions{})
	if err := c.nodes["n1"].Monitor(w.pid, target.pid); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes["n2"].Monitor(watcher2.pid, w.pid); err != nil {
		t.Fatal(err)
	}
	c.roundTrip("n2", "n1")
	c.roundTrip("n1", "n2")
	c.net.ReportDown("n1", "n2")
	if e := w.event(t); e.From != target.pid || !errors.Is(e.Exit.Err, process.ErrNoConnection) {
		t.Fatalf("event = %+v", e)
	}
	c.noEvent(t, watcher2, "n1")
	if _, _, err := c.nodes["n1"].Ask(c.spawn("n2", echo, process.SpawnOptions{}), process.Message{}, 5*time.Second); err != nil {
		t.Fatalf("ask after a reported down: %v", err)
	}
}

// A delay holds up the frames behind it: one direction stays in order.
func TestMemNetworkDelayKeepsOrder(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	b := c.spawnProbe("n2", process.SpawnOptions{})
	c.net.SetFault(func(from, to string, frame []byte) (bool, time.Duration) {
		if len(frame) > 0 && frame[len(frame)-1] == 'a' {
			return false, 100 * time.Millisecond
		}
		return false, 0
	})
	for _, topic := range []string{"a", "b", "c"} {
		if err := c.nodes["n1"].Send(b.pid, process.Message{Topic: topic}); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"a", "b", "c"} {
		if m := b.msg(t); m.Topic != want {
			t.Fatalf("got %q, want %q", m.Topic, want)
		}
	}
}
