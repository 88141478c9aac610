package process

import (
	"errors"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/value"
)

// A topic or a name past its bound is a limit error at the send, before
// anything keeps it: no dead letter, and an error that says how long it was
// without quoting it.
func TestLabelsBoundedAtTheSend(t *testing.T) {
	n, box := newLetterNode()
	sender, _ := n.Spawn(echo, SpawnOptions{})
	defer n.Kill(sender)
	dead := PID{Node: n.Name(), ID: 999_999, Creation: n.creation}
	long := strings.Repeat("t", MaxTopicSize+1)
	longName := strings.Repeat("n", MaxNameSize+1)
	tests := []struct {
		name string
		do   func() error
	}{
		{"topic to a dead pid", func() error { return n.Send(dead, Message{Topic: long}) }},
		{"topic to a live pid", func() error { return n.Send(sender, Message{Topic: long}) }},
		{"topic to a name", func() error { return n.SendName(n.Name(), "nobody", Message{Topic: long}) }},
		{"topic to a remote name", func() error { return n.SendName("elsewhere", "svc", Message{Topic: long}) }},
		{"name", func() error { return n.SendName(n.Name(), longName, Message{Topic: "t"}) }},
		{"remote name", func() error { return n.SendName("elsewhere", longName, Message{Topic: "t"}) }},
		{"register", func() error { return n.Register(longName, sender) }},
		{"resolve", func() error { _, err := n.Resolve(longName); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if !errors.Is(err, ErrTooLong) || value.KindOf(err) != value.KindLimit {
				t.Fatalf("err = %v (kind %s), want ErrTooLong, a limit", err, value.KindOf(err))
			}
			if len(err.Error()) > 200 {
				t.Fatalf("the error quotes what it refused: %d bytes", len(err.Error()))
			}
			if got := box.take(); len(got) != 0 {
				t.Fatalf("dead letters kept: %d", len(got))
			}
		})
	}
	// At the bound, everything goes through as before.
	if err := n.Send(sender, Message{Topic: long[:MaxTopicSize]}); err != nil {
		t.Fatal(err)
	}
	if err := n.Register(longName[:MaxNameSize], sender); err != nil {
		t.Fatal(err)
	}
	if err := n.Send(dead, Message{Topic: long[:MaxTopicSize]}); !errors.Is(err, ErrNoProcess) {
		t.Fatal(err)
	}
	if got := box.take(); len(got) != 1 || len(got[0].Topic) != MaxTopicSize {
		t.Fatalf("dead letters: %d", len(got))
	}
}
