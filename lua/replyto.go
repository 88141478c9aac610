package lua

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
)

// ReplyTopic is the topic of a forwarded reply when the tell's options name
// none.
const ReplyTopic = "reply"

var replyToOptionNames = []string{"reply_to", "topic"}

// describeArg names what was passed: its type, or that it is empty.
func describeArg(v lua.LValue) string {
	if s, ok := v.(lua.LString); ok && s == "" {
		return "an empty string"
	}
	return v.Type().String()
}

// ReplyToArg reads argument n of fn (a tell: process.send, router.tell),
// its options: absent, or {reply_to = dest [, topic = t]}. With reply_to, m
// gets a reply target that sends the reply to dest as a message (see
// process.ForwardReply): topic t ("reply" unless given), from the process
// that replied, payload {value = reply} or {error = err}. dest is anything
// process.send takes (a PID, a name, name@node), resolved when the reply is
// sent (a malformed PID is an error now). A receiver that never replies
// forwards nothing. Options of the wrong type, or unknown ones, raise.
func ReplyToArg(L *lua.LState, n int, fn string, m process.Message) (process.Message, error) {
	if L.Get(n) == lua.LNil {
		return m, nil
	}
	t, ok := L.Get(n).(*lua.LTable)
	if !ok {
		L.ArgError(n, "options {reply_to = dest, topic = t} expected, got "+L.Get(n).Type().String())
	}
	dest, topic := "", ReplyTopic
	t.ForEach(func(k, v lua.LValue) {
		ks, _ := k.(lua.LString)
		s, isStr := v.(lua.LString)
		switch ks {
		case "reply_to":
			if !isStr || s == "" {
				L.ArgError(n, "option reply_to must be a PID or a name (a non-empty string), got "+describeArg(v))
			}
			dest = string(s)
		case "topic":
			if !isStr || s == "" {
				L.ArgError(n, "option topic must be a non-empty string, got "+describeArg(v))
			}
			topic = string(s)
		default:
			L.ArgError(n, missingMessage(fn, "option", lua.LVAsString(k), replyToOptionNames))
		}
	})
	if dest == "" {
		L.ArgError(n, "option reply_to is required: the PID or name the reply goes to")
	}
	// reply_to and topic are labels like a send's: bounded before they
	// are kept for a reply that may come much later.
	if err := process.CheckName(fn+": option reply_to", dest); err != nil {
		return m, err
	}
	if err := process.CheckTopic(fn+": option topic", topic); err != nil {
		return m, err
	}
	send, err := sendTo(ProcessOf(L).Node(), dest)
	if err != nil {
		return m, fmt.Errorf("%s: option reply_to: %w", fn, err)
	}
	return m.WithReply(process.ForwardReply(topic, send), 0), nil
}

// sendTo returns a send to dest that any goroutine may call (a reply is
// forwarded from the replier's): a PID, a name of this node, or
// name@node, each resolved when it is called, as process.send resolves
// them; what cannot be delivered is a dead letter.
func sendTo(node *process.Node, dest string) (func(process.Message) error, error) {
	if name, at, ok := process.SplitNodeName(dest); ok {
		if strings.IndexByte(name, '@') >= 0 {
			return nil, fmt.Errorf("%q: %w: want name@node", dest, process.ErrInvalidName)
		}
		return func(m process.Message) error { return node.SendName(at, name, m) }, nil
	}
	if strings.IndexByte(dest, '@') >= 0 && !process.IsPIDString(dest) {
		return nil, fmt.Errorf("%q: %w: want name@node", dest, process.ErrInvalidName)
	}
	if process.IsPIDString(dest) {
		pid, err := process.ParsePID(dest)
		if err != nil {
			return nil, err
		}
		return func(m process.Message) error { return node.Send(pid, m) }, nil
	}
	local := node.Name()
	return func(m process.Message) error { return node.SendName(local, dest, m) }, nil
}
