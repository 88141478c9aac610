package process

import (
	"context"
	"errors"
	"testing"
	"time"
)

type echo struct{}

func (echo) Receive(c Context, m Message) {
	if m.CanReply() {
		c.Reply(&m, m.Payload, nil)
	}
}

func TestSmoke(t *testing.T) {
	n := NewNode(Options{Name: "n1"})
	pid, err := n.Spawn(echo{}, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, from, err := n.Ask(pid, Message{Topic: "x", Payload: "hi"}, time.Second)
	if err != nil || v != "hi" || from != pid {
		t.Fatalf("ask: %v %v %v", v, from, err)
	}
	got := make(chan Message, 1)
	fp, _ := n.SpawnFunc(func(p *Proc) (any, error) {
		m, err := p.Receive(context.Background())
		if err != nil {
			return nil, err
		}
		got <- m
		return "done", nil
	}, SpawnOptions{})
	if err := n.Send(fp, Message{Topic: "t", Payload: 1.0}); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m.Topic != "t" {
		t.Fatal(m)
	}
	ex, err := n.Stop(context.Background(), pid)
	if err != nil || !errors.Is(ex.Err, ErrShutdown) {
		t.Fatal(ex, err)
	}
	if err := n.Send(pid, Message{}); !errors.Is(err, ErrNoProcess) {
		t.Fatal(err)
	}
}
