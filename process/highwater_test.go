package process

import (
	"encoding/json"
	"testing"
)

// parked spawns a goroutine process that receives nothing until it is
// killed, so its mailbox only grows.
func parked(t *testing.T, n *Node, opts SpawnOptions) PID {
	t.Helper()
	pid, err := n.SpawnFunc(func(p *Proc) (any, error) {
		<-p.Context().Done()
		return nil, nil
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Kill(pid) })
	return pid
}

func TestMailboxHighWater(t *testing.T) {
	n := newTestNode()
	bounded := parked(t, n, SpawnOptions{MailboxSize: 10})
	unbounded := parked(t, n, SpawnOptions{})
	for i := 0; i < 7; i++ {
		if err := n.Send(bounded, Message{}); err != nil {
			t.Fatal(err)
		}
	}
	// A bounded mailbox's mark is exact.
	if st, ok := n.Mailbox(bounded); !ok || st.Len != 7 || st.HighWater != 7 {
		t.Fatalf("bounded: %+v, %v", st, ok)
	}
	// An unbounded one is sampled once per chunk: within chunkSize.
	const sent = 5*chunkSize + 3
	for i := 0; i < sent; i++ {
		n.Send(unbounded, Message{})
	}
	st, _ := n.Mailbox(unbounded)
	if st.Len != sent || st.HighWater > sent || st.HighWater < sent-chunkSize {
		t.Fatalf("unbounded: %+v; want len %d, high water within %d of it", st, sent, chunkSize)
	}
	if _, ok := n.Mailbox(PID{Node: "test", ID: 12345, Creation: n.Creation()}); ok {
		t.Fatal("stats of no process")
	}

	sum := n.Mailboxes(1)
	if sum.Processes != 2 || sum.HighWater != st.HighWater || len(sum.Deepest) != 1 || sum.Deepest[0].PID != unbounded {
		t.Fatalf("summary %+v", sum)
	}
	// The node keeps the mark of a process that exited.
	n.Kill(unbounded)
	if sum := n.Mailboxes(5); sum.HighWater != st.HighWater || sum.Processes != 1 || len(sum.Deepest) != 1 || sum.Deepest[0].PID != bounded {
		t.Fatalf("after exit: %+v", sum)
	}
}

// A bounded mailbox that drains and refills keeps its highest mark.
func TestMailboxHighWaterKeepsThePeak(t *testing.T) {
	m := newTestNode()
	p := parked(t, m, SpawnOptions{MailboxSize: 100})
	for i := 0; i < 40; i++ {
		m.Send(p, Message{})
	}
	proc := m.lookup(p)
	for i := 0; i < 40; i++ {
		proc.mb.pop()
	}
	for i := 0; i < 5; i++ {
		m.Send(p, Message{})
	}
	if st, _ := m.Mailbox(p); st.Len != 5 || st.HighWater != 40 {
		t.Fatalf("%+v", st)
	}
}

func TestMailboxesTopOrder(t *testing.T) {
	n := newTestNode()
	depths := []int{3, 9, 1, 0, 7, 9, 2}
	pids := make([]PID, len(depths))
	for i, d := range depths {
		pids[i] = parked(t, n, SpawnOptions{})
		for j := 0; j < d; j++ {
			n.Send(pids[i], Message{})
		}
	}
	sum := n.Mailboxes(3)
	if len(sum.Deepest) != 3 || sum.Deepest[0].Len != 9 || sum.Deepest[1].Len != 9 || sum.Deepest[2].Len != 7 {
		t.Fatalf("deepest %+v", sum.Deepest)
	}
	if all := n.Mailboxes(100); len(all.Deepest) != 6 || all.Processes != 7 {
		t.Fatalf("all %+v", all)
	}
	if none := n.Mailboxes(0); len(none.Deepest) != 0 || none.Processes != 7 {
		t.Fatalf("none %+v", none)
	}
}

func TestPIDAsJSONText(t *testing.T) {
	pid := PID{Node: "n1", ID: 7, Creation: 3}
	b, err := json.Marshal(MailboxStats{PID: pid, Len: 1, HighWater: 2})
	if err != nil || string(b) != `{"pid":"\u003cn1.7.3\u003e","len":1,"high_water":2}` {
		t.Fatalf("%s, %v", b, err)
	}
	var back MailboxStats
	if err := json.Unmarshal(b, &back); err != nil || back.PID != pid {
		t.Fatalf("%+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"pid":"app:x"}`), &back); err == nil {
		t.Fatal("parsed a name as a PID")
	}
}
