package lua

import (
	"fmt"
	"math"
	"sync"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/value"
)

// Channel is a queue that one process receives from. Scripts make their own
// with channel.new; the host makes channels fed by the process core (the
// inbox, listen channels, events), by timers (time.after) and by Go
// modules (NewChannel + Offer), and a script waits on any mix of them with
// channel.select.
//
// A process runs on one goroutine, so a script's send never waits for a
// receiver: a channel is unbounded, or bounded, in which case a send to a
// full channel fails (kind limit) rather than wait for a receive that only
// the same goroutine could make.
type Channel struct {
	owner *Process
	ud    *lua.LUserData

	mu       sync.Mutex
	items    []any // Lua values (script channels) or Go values (fed channels)
	head     int
	limit    int // 0: unbounded
	closed   bool
	external bool                              // fed from other goroutines: a receive may wait
	kind     chanKind                          // where items come from
	topic    string                            // listen channels
	conv     func(*lua.LState, any) lua.LValue // Go item -> Lua; nil for script channels
}

type chanKind uint8

const (
	chanScript chanKind = iota
	chanFed             // Go code offers items
	chanInbox           // the mailbox, minus listened topics
	chanListen          // one topic of the mailbox
	chanEvents          // system events
)

// NewChannel returns a channel owned by p that Go code (any goroutine)
// feeds with Offer and the script receives from. limit bounds it (0 means
// unbounded); items are Go values converted with ToLua on receipt, so
// each receiver gets its own copy.
func (p *Process) NewChannel(limit int) *Channel {
	return &Channel{owner: p, limit: limit, external: true, kind: chanFed}
}

// Offer queues v without blocking. It returns false when the channel is
// closed or full, so a slow script loses items instead of stalling the
// producer; the producer decides what to count or log.
func (c *Channel) Offer(v any) bool {
	c.mu.Lock()
	if c.closed || (c.limit > 0 && len(c.items)-c.head >= c.limit) {
		c.mu.Unlock()
		return false
	}
	c.items = append(c.items, v)
	c.mu.Unlock()
	c.owner.notify()
	return true
}

// Close closes the channel: receivers drain what is queued, then get
// nil, false. Closing twice is harmless.
func (c *Channel) Close() {
	c.mu.Lock()
	was := c.closed
	c.closed = true
	c.mu.Unlock()
	if !was {
		c.owner.notify()
	}
}

// Discard drops every item still queued: a subscription closed with a
// flush discards what it had delivered but the script not yet received.
func (c *Channel) Discard() {
	c.mu.Lock()
	clear(c.items)
	c.items, c.head = c.items[:0], 0
	c.mu.Unlock()
}

// Closed reports whether Close was called.
func (c *Channel) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Len returns the number of queued items.
func (c *Channel) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items) - c.head
}

// Value returns the channel as scripts see it (always the same userdata,
// so channels compare equal in select results).
func (c *Channel) Value(L *lua.LState) lua.LValue {
	if c.ud == nil {
		c.ud = channelType.New(L, c)
	}
	return c.ud
}

// push appends without the limit check (the caller checked it).
func (c *Channel) pushLocked(v any) { c.items = append(c.items, v) }

func (c *Channel) popLocked() (any, bool) {
	if c.head >= len(c.items) {
		return nil, false
	}
	v := c.items[c.head]
	c.items[c.head] = nil
	c.head++
	if c.head == len(c.items) {
		c.items, c.head = c.items[:0], 0
	} else if c.head > 32 && c.head*2 > len(c.items) {
		n := copy(c.items, c.items[c.head:])
		clear(c.items[n:])
		c.items, c.head = c.items[:n], 0
	}
	return v, true
}

// tryReceive returns the next item as a Lua value. ok is false when the
// channel is closed and drained; ready is false when it would block.
func (c *Channel) tryReceive(L *lua.LState) (v lua.LValue, ok, ready bool) {
	p := c.owner
	switch c.kind {
	case chanInbox:
		if m, found := p.mbox.nextInbox(); found {
			return p.messageValue(L, m), true, true
		}
	case chanListen:
		if m, found := p.mbox.nextListen(c); found {
			return p.messageValue(L, m), true, true
		}
	case chanEvents:
		p.mbox.pumpEvents()
	}
	c.mu.Lock()
	item, found := c.popLocked()
	closed := c.closed
	c.mu.Unlock()
	if found {
		if c.conv != nil {
			return c.conv(L, item), true, true
		}
		if lv, isLua := item.(lua.LValue); isLua && c.kind == chanScript {
			return lv, true, true
		}
		lv, err := ToLua(L, item)
		if err != nil {
			return ErrorValue(L, value.FromError(err)), true, true
		}
		return lv, true, true
	}
	if closed {
		return lua.LNil, false, true
	}
	return lua.LNil, false, false
}

// trySend queues a script's value. It raises on a closed channel (as Go
// panics) and reports full=true on a full bounded channel.
func (c *Channel) trySend(L *lua.LState, v lua.LValue) (full bool) {
	if c.kind != chanScript {
		L.RaiseError("channel.send: only channels made with channel.new can be sent to")
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		L.RaiseError("channel.send: send on a closed channel")
	}
	if c.limit > 0 && len(c.items)-c.head >= c.limit {
		c.mu.Unlock()
		return true
	}
	c.pushLocked(v)
	c.mu.Unlock()
	return false
}

func checkChannel(L *lua.LState, n int) *Channel {
	ud, ok := L.Get(n).(*lua.LUserData)
	if ok {
		if c, ok := ud.Value.(*Channel); ok {
			if c.owner != ProcessOf(L) {
				L.ArgError(n, "channel belongs to another process")
			}
			return c
		}
	}
	L.ArgError(n, "channel expected, got "+L.Get(n).Type().String())
	return nil
}

// selectCase is what ch:case_receive() and ch:case_send(v) return.
type selectCase struct {
	ch   *Channel
	send bool
	v    lua.LValue
}

// channelModule is the global channel.
var channelModule = Module{
	Name: "channel",
	Doc:  "Channels, and select over them, the inbox, listen channels, events and timers.",
	Funcs: []Func{
		{Name: "new", Fn: channelNew, Doc: "A channel of this process: unbounded, or holding at most size values.",
			Params: "size?: integer", Results: "channel"},
		{Name: "select", Fn: channelSelect, Doc: "Waits for the first ready case, in the order given, or takes default when none is.",
			Params: "cases: table", Results: "table|nil, error?"},
	},
	Types: []*Type{channelType, caseType},
}

var channelType = NewType("channel",
	Func{Name: "send", Fn: channelSend, Doc: "Queues a value; a full bounded channel is a limit error, a closed one raises.",
		Params: "value: any", Results: "true|nil, error?"},
	Func{Name: "receive", Fn: channelReceive, Doc: "The next value and true, or nil, false once the channel is closed and drained.",
		Results: "any, boolean|error"},
	Func{Name: "close", Fn: channelClose, Doc: "Closes the channel; queued values can still be received."},
	Func{Name: "case_receive", Fn: channelCaseReceive, Doc: "A receive case for channel.select.", Results: "channel.case"},
	Func{Name: "case_send", Fn: channelCaseSend, Doc: "A send case for channel.select.", Params: "value: any", Results: "channel.case"},
	Func{Name: "__tostring", Fn: channelToString, Doc: "channel(kind)", Results: "string"},
)

// caseType is what ch:case_receive() and ch:case_send(v) return.
var caseType = NewType("channel.case")

// channelNew is channel.new([size]). A script's channel holds at most as
// many values as a table may (Options.MaxTableEntries): an "unbounded" one
// too, else sending in a loop took the node's memory. A size past that, NaN
// or negative raises (1e300 and NaN became a negative int: "size must not
// be negative").
func channelNew(L *lua.LState) int {
	p := ProcessOf(L)
	f := float64(L.OptNumber(1, 0))
	most := p.host.limits.maxTable
	switch {
	case math.IsNaN(f):
		L.ArgError(1, "size must be a number, got nan")
	case f < 0:
		L.ArgError(1, "size must not be negative")
	case f > float64(most):
		L.ArgError(1, fmt.Sprintf("size %g is over the limit of %d values a channel may hold", f, most))
	}
	size := int(f)
	if size == 0 {
		size = most
	}
	c := &Channel{owner: p, limit: size, kind: chanScript}
	L.Push(c.Value(L))
	return 1
}

func channelSend(L *lua.LState) int {
	c := checkChannel(L, 1)
	if c.trySend(L, L.Get(2)) {
		return ReturnError(L, value.NewError(value.KindLimit, "channel full (%d values): a process cannot wait for its own receive", c.limit))
	}
	L.Push(lua.LTrue)
	return 1
}

func channelReceive(L *lua.LState) int {
	c := checkChannel(L, 1)
	p := c.owner
	for {
		v, ok, ready := c.tryReceive(L)
		if ready {
			L.Push(v)
			L.Push(lua.LBool(ok))
			return 2
		}
		if !c.external {
			L.RaiseError("channel.receive: the channel is empty and only this process can fill it: it would wait forever")
		}
		if ret, done := p.wait(L, c); done {
			return ret
		}
	}
}

// ready reports whether a receive might now succeed (a waiter); it is
// checked after the process armed its wake-up, so a producer that comes
// later wakes it.
func (c *Channel) ready() bool {
	p := c.owner
	switch c.kind {
	case chanInbox, chanListen:
		if p.proc.Pending() > 0 {
			return true
		}
	case chanEvents:
		if p.mbox.eventsPending() {
			return true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed || c.head < len(c.items)
}

func channelClose(L *lua.LState) int {
	c := checkChannel(L, 1)
	if c.kind != chanScript && c.kind != chanFed {
		L.RaiseError("channel.close: the %s channel belongs to the process and cannot be closed", c.describe())
	}
	c.Close()
	return 0
}

func channelCaseReceive(L *lua.LState) int {
	c := checkChannel(L, 1)
	L.Push(caseType.New(L, &selectCase{ch: c}))
	return 1
}

func channelCaseSend(L *lua.LState) int {
	c := checkChannel(L, 1)
	if c.kind != chanScript {
		L.RaiseError("channel.case_send: only channels made with channel.new can be sent to")
	}
	L.Push(caseType.New(L, &selectCase{ch: c, send: true, v: L.Get(2)}))
	return 1
}

// channelSelect waits for the first ready case, in the order given (so a
// script can give priority), or takes default when nothing is ready.
func channelSelect(L *lua.LState) int {
	p := ProcessOf(L)
	t := L.CheckTable(1)
	n := t.Len()
	cases := make([]*selectCase, 0, n)
	for i := 1; i <= n; i++ {
		ud, ok := t.RawGetInt(i).(*lua.LUserData)
		var sc *selectCase
		if ok {
			sc, _ = ud.Value.(*selectCase)
		}
		if sc == nil {
			L.ArgError(1, fmt.Sprintf("case %d: expected ch:case_receive() or ch:case_send(v), got %s", i, t.RawGetInt(i).Type()))
		}
		cases = append(cases, sc)
	}
	hasDefault := lua.LVAsBool(t.RawGetString("default"))
	if len(cases) == 0 && !hasDefault {
		L.ArgError(1, "select needs at least one case or default = true")
	}
	canWait := false
	for _, sc := range cases {
		if sc.ch.external {
			canWait = true
		}
	}
	for {
		for _, sc := range cases {
			if sc.send {
				if !sc.ch.trySend(L, sc.v) {
					r := L.CreateTable(0, 3)
					r.RawSetString("channel", sc.ch.Value(L))
					r.RawSetString("ok", lua.LTrue)
					L.Push(r)
					return 1
				}
				continue
			}
			v, ok, ready := sc.ch.tryReceive(L)
			if ready {
				r := L.CreateTable(0, 3)
				r.RawSetString("channel", sc.ch.Value(L))
				r.RawSetString("value", v)
				r.RawSetString("ok", lua.LBool(ok))
				L.Push(r)
				return 1
			}
		}
		if hasDefault {
			r := L.CreateTable(0, 1)
			r.RawSetString("default", lua.LTrue)
			L.Push(r)
			return 1
		}
		if !canWait {
			L.RaiseError("channel.select: no case is ready and only this process could make one ready: it would wait forever")
		}
		if ret, done := p.wait(L, &selectWait{cases: cases}); done {
			return ret
		}
	}
}

func (c *Channel) describe() string {
	switch c.kind {
	case chanInbox:
		return "inbox"
	case chanListen:
		return fmt.Sprintf("listen(%q)", c.topic)
	case chanEvents:
		return "events"
	case chanFed:
		return "fed"
	}
	return "script"
}

func channelToString(L *lua.LState) int {
	ud := L.CheckUserData(1)
	c, _ := ud.Value.(*Channel)
	if c == nil {
		L.Push(lua.LString("channel"))
		return 1
	}
	L.Push(lua.LString(fmt.Sprintf("channel(%s)", c.describe())))
	return 1
}
