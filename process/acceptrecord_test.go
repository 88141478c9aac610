package process

import (
	"testing"
	"time"
)

// TestCallAcceptRecord: a message says its asker takes a Record only for
// the call that said so, and only while that call is open; a tell, a
// call that did not say so, and a forwarded reply never do.
func TestCallAcceptRecord(t *testing.T) {
	tell := Message{Topic: "t"}
	if tell.AcceptsRecord() {
		t.Fatal("a tell accepts a record")
	}
	plain := NewCall()
	m := plain.MessageWithin(Message{Topic: "t"}, time.Minute)
	if m.AcceptsRecord() {
		t.Fatal("a call that did not say so accepts a record")
	}
	if _, err := m.Reply(PID{}, "x", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Wait(time.Minute, nil); err != nil {
		t.Fatal(err)
	}

	c := NewCall()
	c.AcceptRecord()
	m = c.MessageWithin(Message{Topic: "t"}, time.Minute)
	if !m.AcceptsRecord() {
		t.Fatal("the call that said so does not accept a record")
	}
	if fw := m.WithReplyDeadline(ForwardReply("x", func(Message) error { return nil }), 0, time.Now().Add(time.Minute)); fw.AcceptsRecord() {
		t.Fatal("a forwarded reply accepts a record")
	}
	if _, err := m.Reply(PID{}, "x", nil); err != nil {
		t.Fatal(err)
	}
	if m.AcceptsRecord() {
		t.Fatal("a settled call still accepts a record")
	}
	if _, err := c.Wait(time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	// The next calls, on refs reused from the pool, start without it.
	for range 4 {
		n := NewCall()
		if nm := n.MessageWithin(Message{Topic: "t"}, time.Minute); nm.AcceptsRecord() {
			t.Fatal("a reused ref kept the last call's word")
		}
		if _, err := n.Abandon(nil); err != nil {
			t.Fatal(err)
		}
	}
}
