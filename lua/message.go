package lua

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// luaMessage is a received message as scripts see it: 64 bytes, the
// message in the mailbox's own form (process.Received) and its handle, and
// 72 as an ask (askMessage), which alone carries a reply state. Its
// handle's Value is the *luaMessage or the *askMessage.
type luaMessage struct {
	ud lua.LUserData // its handle: one allocation per message, not two
	// r.Payload is the sender's value until msg:payload() converts it to
	// a table or a userdata: then it is that Lua value (convertedTable,
	// convertedUserData), so the script sees the same one on every call.
	// A converted scalar is converted again instead: it has no identity.
	// Only the host reads a received message's payload; the core reads
	// only the reply target of the asks handed back (Proc.Unanswered).
	r process.Received
}

// convertedTable and convertedUserData are a payload msg:payload() has
// converted. Each is one pointer, so storing it in the payload allocates
// nothing; being the host's own types, no sender's value is taken for
// one.
type (
	convertedTable    struct{ t *lua.LTable }
	convertedUserData struct{ ud *lua.LUserData }
)

// askMessage is a received message that can be replied to.
type askMessage struct {
	luaMessage
	replied bool // msg:reply was called (see asks.go)
}

func (p *Process) messageValue(L *lua.LState, r process.Received) lua.LValue {
	if r.CanReply() {
		am := &askMessage{luaMessage: luaMessage{r: r}}
		p.lazy().asks.add(am)
		messageType.Init(L, &am.ud, am)
		return &am.ud
	}
	lm := &luaMessage{r: r}
	messageType.Init(L, &lm.ud, lm)
	return &lm.ud
}

var messageType = NewType("message",
	Func{Name: "topic", Fn: msgTopic, Doc: "The message's topic.", Results: "string"},
	Func{Name: "from", Fn: msgFrom, Doc: "The sender's PID, or nil when the sender is not a process.", Results: "pid?"},
	Func{Name: "payload", Fn: msgPayload, Doc: "The payload: a copy of what the sender sent; a table is converted once per message, the same table on every call.", Results: "any|nil, error?"},
	Func{Name: "reply", Fn: msgReply, Doc: "Answers an ask with a value, or rejects it with an error: true when this reply settled the ask.",
		Params: "value?: any, err?: error|string|table", Results: "boolean|nil, error?"},
	Func{Name: "__tostring", Fn: messageToString, Doc: "message(\"topic\" from <pid>)", Results: "string"},
)

func checkMessage(L *lua.LState) *luaMessage {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		switch m := ud.Value.(type) {
		case *luaMessage:
			return m
		case *askMessage:
			return &m.luaMessage
		}
	}
	L.ArgError(1, "message expected (use msg:method())")
	return nil
}

func msgTopic(L *lua.LState) int {
	m := checkMessage(L)
	L.Push(lua.LString(m.r.Topic()))
	return 1
}

func msgFrom(L *lua.LState) int {
	m := checkMessage(L)
	from := m.r.From()
	if from.IsZero() {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(PIDValue(from))
	return 1
}

func msgPayload(L *lua.LState) int {
	m := checkMessage(L)
	var lv lua.LValue
	switch c := m.r.Payload.(type) {
	case convertedTable:
		lv = c.t
	case convertedUserData:
		lv = c.ud
	default:
		var err error
		if lv, err = ToLua(L, c); err != nil {
			return ReturnError(L, err)
		}
		switch v := lv.(type) {
		case *lua.LTable:
			m.r.Payload = convertedTable{v}
		case *lua.LUserData:
			m.r.Payload = convertedUserData{v}
		}
	}
	L.Push(lv)
	return 1
}

// msgReply answers an ask: reply(value), or reply(nil, err) to reject it.
// It returns true when this reply settled the ask, false when the ask was
// already settled or timed out (the reply is dropped), nil, err when the
// message was not an ask or the value cannot be copied. A value that
// cannot be copied (a cycle, a function) still settles the ask: with an
// internal error that says so, as a reply the host cannot deliver. Left
// open, its asker waited out its timeout for a reply that could never
// come (an HTTP client got 504 seconds later, and nothing was logged),
// and the script, which rarely checks what reply returned, never knew.
func msgReply(L *lua.LState) int {
	m := checkMessage(L)
	p := ProcessOf(L)
	var (
		v    any
		rej  error
		cerr error // why v could not be copied
	)
	if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
		rej = errorFromLua(L, L.Get(3))
	} else {
		if msg := m.r.Message(); msg.AcceptsRecord() {
			v, cerr = ToGoRecordAt(L.Get(2), "reply") // an HTTP route's ask
		} else {
			v, cerr = ToGoAt(L.Get(2), "reply")
		}
		if cerr != nil {
			if !m.r.CanReply() {
				return ReturnError(L, cerr)
			}
			e := value.Wrap(value.FromError(cerr), "the reply cannot be copied", nil)
			e.Kind = value.KindInternal // the replier's failure, not the asker's
			rej = e
		}
	}
	if am, ok := L.Get(1).(*lua.LUserData).Value.(*askMessage); ok {
		am.replied = true
		p.lazy().asks.answered(am)
	}
	// Through the node: a reply after the ask ended is a dead letter.
	msg := m.r.Message()
	settled, err := p.Node().Reply(&msg, p.self, v, rej)
	if err != nil {
		return ReturnError(L, fmt.Errorf("reply to %q: %w", msg.Topic, err))
	}
	if cerr != nil {
		return ReturnError(L, cerr)
	}
	L.Push(lua.LBool(settled))
	return 1
}

func messageToString(L *lua.LState) int {
	m := checkMessage(L)
	L.Push(lua.LString(fmt.Sprintf("message(%q from %s)", m.r.Topic(), m.r.From())))
	return 1
}
