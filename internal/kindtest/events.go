package kindtest

import (
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// EventWatcher spawns a process on node that keeps the events it gets (the
// EXITs of what it monitors: pass its PID as a StartOptions.MonitorBy)
// and returns its PID and events, which hands over what it got since the
// last call. events asks the process itself, so what reached its queue
// before the call is in the answer. The process is killed when the test
// ends.
func EventWatcher(t testing.TB, node *process.Node) (pid process.PID, events func() []process.Event) {
	t.Helper()
	pid, err := node.SpawnFunc(func(p *process.Proc) (any, error) {
		var got []process.Event
		for {
			m, err := p.Receive(p.Context())
			if err != nil {
				return nil, nil
			}
			for {
				e, ok := p.TryEvent()
				if !ok {
					break
				}
				got = append(got, e)
			}
			if reply, ok := m.Payload.(chan []process.Event); ok {
				reply <- got
				got = nil
			}
		}
	}, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if done, _, ok := node.Done(pid); ok {
			_ = node.Kill(pid)
			<-done
		}
	})
	return pid, func() []process.Event {
		t.Helper()
		reply := make(chan []process.Event, 1)
		if err := node.Send(pid, process.Message{Topic: "events", Payload: reply}); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-reply:
			return got
		case <-time.After(10 * time.Second):
			t.Fatal("the event watcher did not answer")
			return nil
		}
	}
}
