package lua

import (
	"errors"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// State sizing, measured with BenchmarkLuaIdleMemory (100,000 idle
// processes: about 10.5 KB of heap each, plus a 4 KB goroutine stack; a
// state with its own safe libraries costs 49 KB or more, see NOTES.md): the
// data stack starts at the minimum gopher-lua allows (128 slots) and grows
// on demand up to registryMax; the call stack grows in segments of 8 frames
// up to callStackSize. Deeper recursion is a catchable Lua error.
const (
	registrySize     = 128
	registryMax      = 64 * 1024
	registryGrowStep = 32
	callStackSize    = 200
)

// newState builds a sandboxed state for p: no libraries of its own (the
// standard ones are shared, see shared.go), a small global table, the
// string metatable, and the process's context installed.
func newState(p *Process) *lua.LState {
	t := template()
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       callStackSize,
		RegistrySize:        registrySize,
		RegistryMaxSize:     registryMax,
		RegistryGrowStep:    registryGrowStep,
		MinimizeStackMemory: true,
		MaxStringSize:       p.host.limits.maxString,
		MaxTableEntries:     p.host.limits.maxTable,
	})
	// NewState sizes its global table for the full standard library; a
	// sandboxed script's own globals are few.
	g := L.CreateTable(0, 1)
	g.Metatable = t.globalsMeta
	g.RawSetString("_G", g)
	L.G.Global = g
	L.Env = g
	L.SetMetatable(lua.LString(""), t.stringMeta)
	L.SetContext(p.ctx)
	return L
}

// body returns the ProcFunc of one process of entry e.
func (h *Host) body(env *registry.Env, e *registry.Entry, spec *Spec, args []any) process.ProcFunc {
	return func(pr *process.Proc) (any, error) {
		p := &Process{
			proc:  pr,
			host:  h,
			env:   env,
			entry: e,
			spec:  spec,
			self:  pr.Self(),
			wake:  make(chan struct{}, 1),
		}
		p.ctx = &procContext{Context: pr.Context(), p: p}
		p.mbox.p = p
		p.selfStr = PIDValue(p.self)
		L := newState(p)
		p.L = L
		defer L.Close()
		defer p.stopTimers()
		defer p.runExitHooks()
		return p.run(args)
	}
}

// logger is built on first use: most processes never log.
func (p *Process) logger() {
	if p.log == nil {
		base := p.env.Logger
		if base == nil {
			base = discardLogger
		}
		p.log = base.With("entry", string(p.entry.ID), "pid", p.self.String())
	}
}

func (p *Process) run(args []any) (any, error) {
	L := p.L
	spec := p.spec
	L.Push(L.NewFunctionFromProto(spec.main.Proto))
	if err := L.PCall(0, 1, nil); err != nil {
		return nil, p.scriptError(err)
	}
	mod := L.Get(-1)
	L.Pop(1)
	var fn lua.LValue = lua.LNil
	if t, ok := mod.(*lua.LTable); ok {
		// Not a raw get: a module may inherit its method through
		// __index (setmetatable(M, {__index = Base})). The lookup may run
		// a metamethod, so it runs protected.
		L.Push(L.NewFunction(methodLookup))
		L.Push(t)
		L.Push(lua.LString(spec.Method))
		if err := L.PCall(2, 1, nil); err != nil {
			return nil, p.scriptError(err)
		}
		fn = L.Get(-1)
		L.Pop(1)
	}
	if fn == lua.LNil {
		fn = L.G.Global.RawGetString(spec.Method)
	}
	if _, ok := fn.(*lua.LFunction); !ok {
		return nil, value.NewError(value.KindInvalid, "%s: %s: method %q is not a function (got %s)", p.entry.ID, spec.main.Name, spec.Method, fn.Type())
	}
	L.Push(fn)
	for i, a := range args {
		lv, err := ToLua(L, a)
		if err != nil {
			return nil, fmt.Errorf("%s: args[%d]: %w", p.entry.ID, i+1, err)
		}
		L.Push(lv)
	}
	if err := L.PCall(len(args), 1, nil); err != nil {
		return nil, p.scriptError(err)
	}
	ret := L.Get(-1)
	L.Pop(1)
	v, err := ToGoAt(ret, "return value")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.entry.ID, err)
	}
	return v, nil
}

// methodLookup returns t[name], honouring __index.
func methodLookup(L *lua.LState) int {
	L.Push(L.GetField(L.Get(1), L.CheckString(2)))
	return 1
}

// scriptError turns a raised Lua error into the process's exit reason: an
// error value keeps its kind; anything else becomes an internal error whose
// message carries the file:line gopher-lua put in front of it. The stack
// trace goes to the log, not into the reason.
func (p *Process) scriptError(err error) error {
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return value.FromError(err)
	}
	if p.proc.Stopping() {
		// The context's cancellation surfaced as a Lua error; the core
		// replaces it with the stop reason.
		return value.NewError(value.KindStopped, "stopped")
	}
	if e, ok := AsError(ae.Object); ok {
		return e
	}
	// error({kind = …, message = …}): the table shape msg:reply(nil, err)
	// takes; and tables and userdata with __tostring. Their string form
	// ("table: 0x…") would say nothing.
	switch ae.Object.(type) {
	case *lua.LTable, *lua.LUserData:
		return errorFromLua(p.L, ae.Object)
	}
	msg := ae.Object.String()
	if ae.Type == lua.ApiErrorSyntax {
		msg = "syntax error: " + msg
	}
	if ae.StackTrace != "" {
		p.logger()
		p.log.Debug("lua error", "error", msg, "stack", ae.StackTrace)
	}
	return value.NewError(value.KindInternal, "%s", strings.TrimSpace(msg))
}

// notify wakes the process if it is parked; Go-fed channels call it.
func (p *Process) notify() {
	if p.armed.Load() && p.armed.CompareAndSwap(true, false) {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// park waits until something may have changed: mail or an event (through
// the core's wake-up), an item on a Go-fed channel, or a stop request.
// ready is checked after arming, so nothing that arrives meanwhile is
// missed. It returns an error (kind stopped) when the process must stop.
func (p *Process) park(ready func() bool) error {
	ctx := p.proc.Context()
	p.proc.Arm()
	p.armed.Store(true)
	if ready() {
		p.proc.Disarm()
		p.armed.Store(false)
		return nil
	}
	select {
	case <-p.proc.Wake():
	case <-p.wake:
	case <-ctx.Done():
		p.proc.Disarm()
		p.armed.Store(false)
		return errStopping
	}
	p.proc.Disarm()
	p.armed.Store(false)
	return nil
}

var errStopping = value.NewError(value.KindStopped, "process stopping")

// mailbox routes the process core's mailbox to the inbox and the listen
// channels, and its events to the events channel. Messages are taken from
// the core's mailbox only when the script receives, so a bounded mailbox
// still pushes back on senders.
type mailbox struct {
	p       *Process
	inbox   *Channel
	listens map[string]*Channel
	events  *Channel
}

func (mb *mailbox) inboxChannel() *Channel {
	if mb.inbox == nil {
		mb.inbox = &Channel{owner: mb.p, external: true, kind: chanInbox}
	}
	return mb.inbox
}

func (mb *mailbox) eventsChannel() *Channel {
	if mb.events == nil {
		mb.events = &Channel{owner: mb.p, external: true, kind: chanEvents, conv: eventValue}
	}
	return mb.events
}

func (mb *mailbox) listenChannel(topic string) *Channel {
	if c, ok := mb.listens[topic]; ok {
		return c
	}
	if mb.listens == nil {
		mb.listens = map[string]*Channel{}
	}
	c := &Channel{owner: mb.p, external: true, kind: chanListen, topic: topic}
	mb.listens[topic] = c
	// Messages with this topic may already wait in the inbox channel,
	// parked there by an earlier receive on another listen channel. They
	// move over, in order, so listen(topic) sees every message with its
	// topic that no one has received yet, however the mailbox was read.
	if in := mb.inbox; in != nil {
		in.mu.Lock()
		kept := in.items[in.head:in.head]
		for _, it := range in.items[in.head:] {
			if m := it.(process.Message); m.Topic == topic {
				c.pushLocked(m)
			} else {
				kept = append(kept, it)
			}
		}
		clear(in.items[in.head+len(kept):])
		in.items = in.items[:in.head+len(kept)]
		in.mu.Unlock()
	}
	return c
}

// nextInbox returns the oldest message not claimed by a listen channel.
func (mb *mailbox) nextInbox() (process.Message, bool) {
	if c := mb.inbox; c != nil && c.head < len(c.items) {
		c.mu.Lock()
		v, ok := c.popLocked()
		c.mu.Unlock()
		if ok {
			return v.(process.Message), true
		}
	}
	for {
		m, ok := mb.p.proc.TryReceive()
		if !ok {
			return m, false
		}
		if len(mb.listens) > 0 {
			if lc, claimed := mb.listens[m.Topic]; claimed {
				lc.mu.Lock()
				lc.pushLocked(m)
				lc.mu.Unlock()
				continue
			}
		}
		return m, true
	}
}

// nextListen returns the oldest message with c's topic, parking the others
// where their receivers will look.
func (mb *mailbox) nextListen(c *Channel) (process.Message, bool) {
	c.mu.Lock()
	v, ok := c.popLocked()
	c.mu.Unlock()
	if ok {
		return v.(process.Message), true
	}
	for {
		m, ok := mb.p.proc.TryReceive()
		if !ok {
			return m, false
		}
		if m.Topic == c.topic {
			return m, true
		}
		dst := mb.listens[m.Topic]
		if dst == nil {
			dst = mb.inboxChannel()
		}
		dst.mu.Lock()
		dst.pushLocked(m)
		dst.mu.Unlock()
	}
}

func (mb *mailbox) pumpEvents() {
	for {
		e, ok := mb.p.proc.TryEvent()
		if !ok {
			return
		}
		c := mb.eventsChannel()
		c.mu.Lock()
		c.pushLocked(e)
		c.mu.Unlock()
	}
}

func (mb *mailbox) eventsPending() bool {
	mb.pumpEvents()
	return mb.events != nil && mb.events.Len() > 0
}

// eventValue renders a core event as {kind=, from=, result={value=, error=}}.
func eventValue(L *lua.LState, item any) lua.LValue {
	e := item.(process.Event)
	t := L.CreateTable(0, 3)
	t.RawSetString("kind", lua.LString(e.Kind.String()))
	t.RawSetString("from", PIDValue(e.From))
	r := L.CreateTable(0, 2)
	if e.Exit.Err != nil {
		r.RawSetString("error", ErrorValue(L, value.FromError(e.Exit.Err)))
	} else if e.Exit.Value != nil {
		lv, err := ToLua(L, e.Exit.Value)
		if err != nil {
			lv = ErrorValue(L, value.FromError(err))
		}
		r.RawSetString("value", lv)
	}
	t.RawSetString("result", r)
	return t
}

// luaMessage is a received message as scripts see it.
type luaMessage struct {
	m       process.Message
	payload lua.LValue // converted on first msg:payload()
}

func (p *Process) messageValue(L *lua.LState, m process.Message) lua.LValue {
	ud := L.NewUserData()
	ud.Value = &luaMessage{m: m}
	ud.Metatable = template().msgMeta
	return ud
}

// messageMethods is set in init: its functions reach template(), which
// reads it.
var messageMethods *Library

func init() {
	messageMethods = NewLibrary(map[string]lua.LGFunction{
		"topic":   msgTopic,
		"from":    msgFrom,
		"payload": msgPayload,
		"reply":   msgReply,
	})
}

func checkMessage(L *lua.LState) *luaMessage {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if m, ok := ud.Value.(*luaMessage); ok {
			return m
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

// luaRequire loads a runtime module or one of the entry's own modules,
// once per process.
func luaRequire(L *lua.LState) int {
	p := ProcessOf(L)
	name := L.CheckString(1)
	if v, ok := p.loaded[name]; ok {
		L.Push(v)
		return 1
	}
	var result lua.LValue
	if loader, ok := moduleLoader(name); ok {
		top := L.GetTop()
		n := loader(p, L)
		if n < 1 || L.GetTop() < top+1 {
			L.RaiseError("require %q: the module loader pushed nothing", name)
		}
		result = L.Get(top + 1)
		L.SetTop(top)
	} else if c, ok := p.spec.modules[name]; ok {
		if p.loading[name] {
			L.RaiseError("require %q: circular require", name)
		}
		if p.loading == nil {
			p.loading = map[string]bool{}
		}
		p.loading[name] = true
		func() {
			// A module that raises is not left marked as loading: a
			// later require must report its error again, not a cycle.
			defer delete(p.loading, name)
			L.Push(L.NewFunctionFromProto(c.Proto))
			L.Push(lua.LString(name))
			L.Call(1, 1)
		}()
		result = L.Get(-1)
		L.Pop(1)
		if result == lua.LNil {
			result = lua.LTrue
		}
	} else {
		names := ModuleNames()
		for n := range p.spec.modules {
			names = append(names, n)
		}
		L.RaiseError("require %q: no such module (available: %s)", name, strings.Join(names, ", "))
	}
	if p.loaded == nil {
		p.loaded = map[string]lua.LValue{}
	}
	p.loaded[name] = result
	L.Push(result)
	return 1
}

// luaPrint writes its arguments, tab-separated, as one line to stdout.
func luaPrint(L *lua.LState) int {
	p := ProcessOf(L)
	n := L.GetTop()
	parts := make([]string, n)
	size := float64(n)
	for i := 1; i <= n; i++ {
		parts[i-1] = L.ToStringMeta(L.Get(i)).String()
		size += float64(len(parts[i-1]))
	}
	// The line is a string like any other: print(s, s, s, …) of one large
	// string would otherwise build a line of gigabytes.
	checkStringSize(L, "print", size)
	var b strings.Builder
	b.Grow(int(size))
	for i, s := range parts {
		if i > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(s)
	}
	b.WriteByte('\n')
	h := p.host
	h.outMu.Lock()
	_, _ = h.stdout.Write([]byte(b.String()))
	h.outMu.Unlock()
	return 0
}
