package lua

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
)

// luaMessage is a received message as scripts see it. It is 128 bytes, a
// size class below what it took with the reply state of an ask, which a
// tell does not need: an ask is an askMessage. Its handle's Value is the
// *luaMessage or the *askMessage.
type luaMessage struct {
	ud      lua.LUserData // its handle: one allocation per message, not two
	m       process.Message
	payload lua.LValue // converted on first msg:payload()
}

// askMessage is a received message that can be replied to.
type askMessage struct {
	luaMessage
	replied bool // msg:reply was called (see asks.go)
}

func (p *Process) messageValue(L *lua.LState, m process.Message) lua.LValue {
	if m.CanReply() {
		am := &askMessage{luaMessage: luaMessage{m: m}}
		p.asks.add(am)
		messageType.Init(L, &am.ud, am)
		return &am.ud
	}
	lm := &luaMessage{m: m}
	messageType.Init(L, &lm.ud, lm)
	return &lm.ud
}

var messageType = NewType("message",
	Func{Name: "topic", Fn: msgTopic, Doc: "The message's topic.", Results: "string"},
	Func{Name: "from", Fn: msgFrom, Doc: "The sender's PID, or nil when the sender is not a process.", Results: "string?"},
	Func{Name: "payload", Fn: msgPayload, Doc: "The payload: a copy of what the sender sent, converted once per message.", Results: "any|nil, error?"},
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
	L.Push(lua.LString(checkMessage(L).m.Topic))
	return 1
}

func msgFrom(L *lua.LState) int {
	m := checkMessage(L)
	if m.m.From.IsZero() {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(PIDValue(m.m.From))
	return 1
}

func msgPayload(L *lua.LState) int {
	m := checkMessage(L)
	if m.payload == nil {
		lv, err := ToLua(L, m.m.Payload)
		if err != nil {
			return ReturnError(L, err)
		}
		m.payload = lv
	}
	L.Push(m.payload)
	return 1
}

// msgReply answers an ask: reply(value), or reply(nil, err) to reject it.
// It returns true when this reply settled the ask, false when the ask was
// already settled or timed out (the reply is dropped), nil, err when the
// message was not an ask or the value cannot be copied.
func msgReply(L *lua.LState) int {
	m := checkMessage(L)
	p := ProcessOf(L)
	var (
		v   any
		rej error
	)
	if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
		rej = errorFromLua(L, L.Get(3))
	} else {
		var err error
		v, err = ToGoAt(L.Get(2), "reply")
		if err != nil {
			return ReturnError(L, err)
		}
	}
	if am, ok := L.Get(1).(*lua.LUserData).Value.(*askMessage); ok {
		am.replied = true
		p.asks.answered(am)
	}
	// Through the node: a reply after the ask ended is a dead letter.
	settled, err := p.Node().Reply(&m.m, p.self, v, rej)
	if err != nil {
		return ReturnError(L, fmt.Errorf("reply to %q: %w", m.m.Topic, err))
	}
	L.Push(lua.LBool(settled))
	return 1
}

func messageToString(L *lua.LState) int {
	m := checkMessage(L)
	L.Push(lua.LString(fmt.Sprintf("message(%q from %s)", m.m.Topic, m.m.From)))
	return 1
}
