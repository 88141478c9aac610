package process

import (
	"sync/atomic"

	"github.com/proctor-run/proctor/value"
)

// ForwardReply returns a reply target that turns the reply into a message
// handed to send: a tell with an explicit reply target, as Akka's
// tell(msg, sender) and actor-ts's tell(msg, replyTo). The first reply (or
// rejection) wins: it is sent with topic topic, from the process that
// replied, with the payload map {"value": v} or {"error": *value.Error};
// later replies are dropped, as for an ask. Nobody waits for it: a message
// whose receiver never replies forwards nothing. send is the sender's own
// way to its reply-to destination (node.Send to a PID, a send to a name or
// to name@node); a send that fails is its to record, as a dead letter.
//
// A router scatters a message with such a target as it does an ask, and
// forwards the outcome of the race (the winner's reply, or the aggregate
// error) the same way.
func ForwardReply(topic string, send func(Message) error) ReplyTarget {
	return &forwardTarget{send: send, topic: topic}
}

type forwardTarget struct {
	send    func(Message) error
	topic   string
	settled atomic.Bool
}

func (f *forwardTarget) Settle(_ uint64, from PID, v any, err error) bool {
	if !f.settled.CompareAndSwap(false, true) {
		return false
	}
	payload := map[string]any{"value": v}
	if err != nil {
		payload = map[string]any{"error": value.FromError(err)}
	}
	// Nobody is there to see an error: send records what it cannot
	// deliver as a dead letter.
	_ = f.send(Message{From: from, Topic: f.topic, Payload: payload})
	return true
}
