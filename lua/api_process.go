package lua

import (
	"errors"
	"fmt"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// processModule is the global process: messages, asks, spawning, monitors,
// links, names and the process's own channels.
var processModule = Module{
	Name: "process",
	Doc:  "Messages, asks, spawning, monitors, links and names of processes.",
	Funcs: []Func{
		{Name: "pid", Fn: procPID, Doc: "This process's PID.", Results: "pid"},
		{Name: "send", Fn: procSend, Doc: "Sends a message to a PID or a registered name; with {reply_to = dest, topic = t} the receiver's reply arrives at dest as a message {value = reply} or {error = err}.",
			Params: "dest: pid, topic: string, payload?: any, options?: reply_options", Results: "true|nil, error?"},
		{Name: "ask", Fn: procAsk, Doc: "Sends an ask and waits for its reply (timeout in ms or a duration string, default 5s): reply, nil, replier_pid or nil, err.",
			Params: "dest: pid, topic: string, payload?: any, timeout?: duration", Results: "any, error?, pid?"},
		{Name: "spawn", Fn: procSpawn, Doc: "Starts a process of an entry; extra arguments go to its method.",
			Params: "entry_id: string, ...: any", Results: "pid|nil, error?"},
		{Name: "spawn_monitored", Fn: procSpawnMonitored, Doc: "spawn, and monitor the new process: an EXIT event follows its exit.",
			Params: "entry_id: string, ...: any", Results: "pid|nil, error?"},
		{Name: "spawn_linked", Fn: procSpawnLinked, Doc: "spawn, and link the new process to this one.",
			Params: "entry_id: string, ...: any", Results: "pid|nil, error?"},
		{Name: "with_options", Fn: procWithOptions, Doc: "A spawner whose processes start with these options: {name = string, the name registered before init runs; on_reload = \"upgrade\", to be offered the entry's new code after a reload (see process.upgrade)}.",
			Params: "options: table", Results: "spawner"},
		{Name: "monitor", Fn: procMonitor, Doc: "Monitors a process: an EXIT event follows its exit.",
			Params: "dest: pid", Results: "true|nil, error?"},
		{Name: "unmonitor", Fn: procUnmonitor, Doc: "Stops monitoring a process.",
			Params: "dest: pid", Results: "true|nil, error?"},
		{Name: "link", Fn: procLink, Doc: "Links this process to another: an abnormal exit of one stops the other, unless it traps links.",
			Params: "dest: pid", Results: "true|nil, error?"},
		{Name: "unlink", Fn: procUnlink, Doc: "Removes a link.",
			Params: "dest: pid", Results: "true|nil, error?"},
		{Name: "terminate", Fn: procTerminate, Doc: "Stops a process (not one of the runtime's own).",
			Params: "dest: pid", Results: "true|nil, error?"},
		{Name: "register", Fn: procRegister, Doc: "Names this process until it exits (names with ':' are the entries').",
			Params: "name: string", Results: "true|nil, error?"},
		{Name: "lookup", Fn: procLookup, Doc: "The PID a name is registered to.",
			Params: "name: string", Results: "pid|nil, error?"},
		{Name: "set_options", Fn: procSetOptions, Doc: "Sets this process's options: {trap_links = boolean}.",
			Params: "options: table", Results: "true"},
		{Name: "inbox", Fn: procInbox, Doc: "The channel of messages that no listen channel claims.", Results: "channel"},
		{Name: "listen", Fn: procListen, Doc: "The channel of the messages with one topic.",
			Params: "topic: string", Results: "channel"},
		{Name: "events", Fn: procEvents, Doc: "The channel of EXIT and LINK_DOWN events, and UPGRADE {kind = \"UPGRADE\", version = digest} when a reload offers this process its entry's new code (on_reload: upgrade).", Results: "channel"},
		{Name: "upgrade", Fn: procUpgrade, Doc: "Moves this process to its entry's new code (after an UPGRADE event; without one, re-enters the current code's main) and never returns: same PID, names, links, monitors, pg memberships and unread mail; the new code's upgrade(...) maps the values to main's arguments.",
			Params: "...: any"},
	},
	Types: []*Type{messageType, spawnerType},
	Shapes: []Shape{
		{Name: "reply_options", Doc: "Where the reply to a tell goes (process.send, router.tell).", Fields: []Field{
			{Name: "reply_to", Type: "pid", Doc: "The process (a PID, a name, name@node) the reply is sent to, as a message."},
			{Name: "topic", Type: "string", Optional: true, Doc: "The reply message's topic (default \"reply\")."},
		}},
	},
}

func procPID(L *lua.LState) int {
	p := ProcessOf(L)
	m := p.lazy()
	if m.selfStr == "" {
		m.selfStr = PIDValue(p.self)
	}
	L.Push(m.selfStr)
	return 1
}

func procSend(L *lua.LState) int {
	p := ProcessOf(L)
	dest := CheckDest(L, 1)
	topic := CheckLabel(L, 2, "a topic")
	if err := checkLabels("send", dest, topic); err != nil {
		return ReturnError(L, err)
	}
	payload, err := PayloadArg(L, 3)
	if err != nil {
		return ReturnError(L, fmt.Errorf("send %q to %s: %w", topic, dest, err))
	}
	m, err := ReplyToArg(L, 4, "process.send", process.Message{From: p.self, Topic: topic, Payload: payload})
	if err != nil {
		return ReturnError(L, err)
	}
	if err := p.send("send", dest, m); err != nil {
		return ReturnError(L, err)
	}
	L.Push(lua.LTrue)
	return 1
}

// procAsk sends an ask and waits for its reply, its deadline or the
// process's stop, whichever is first. The reply reference is a pooled,
// one-shot process.Call: a reply that comes after the ask settled fails its
// token check and is dropped. In the process's main call the wait suspends
// the process (suspend.go): the ask is kept in p.asked, and the call that
// goes on finds it there instead of sending again.
func procAsk(L *lua.LState) int {
	p := ProcessOf(L)
	dest := CheckDest(L, 1)
	topic := CheckLabel(L, 2, "a topic")
	timeout := OptDuration(L, 4, process.DefaultAskTimeout)
	if timeout <= 0 {
		L.ArgError(4, "timeout must be positive")
	}
	if err := checkLabels("ask", dest, topic); err != nil {
		return ReturnError(L, err)
	}
	if w := p.asked; w != nil && w.active {
		return p.askOn(L, w, dest, topic, timeout, false)
	}
	payload, err := PayloadArg(L, 3)
	if err != nil {
		return ReturnError(L, fmt.Errorf("ask %q of %s: %w", topic, dest, err))
	}
	c := process.NewCall()
	m := c.MessageWithin(process.Message{From: p.self, Topic: topic, Payload: payload}, timeout)
	if p.canSuspend(L) {
		c.WakeOnSettle(p.proc)
		if serr := p.send("ask", dest, m); serr != nil {
			res, err := c.Abandon(serr)
			return askReturn(L, res, err, dest, topic, timeout, nil)
		}
		if p.asked == nil {
			p.asked = &askWait{}
		}
		w := p.asked
		// The message's own deadline: no clock read. The alarm is set
		// only if the ask suspends (drive).
		w.call, w.active = c, true
		w.deadline, _ = c.Deadline()
		return p.askOn(L, w, dest, topic, timeout, true)
	}
	var res process.Reply
	if serr := p.send("ask", dest, m); serr != nil {
		res, err = c.Abandon(serr)
	} else {
		res, err = c.Wait(timeout, p.proc.Context().Done())
	}
	return askReturn(L, res, err, dest, topic, timeout, p.asked)
}

// askOn looks at a suspended ask: its reply, its deadline, a stop. When
// none has come, it suspends again. fresh is the look right after the
// send, which need not read the clock: the deadline is a timeout away.
func (p *Process) askOn(L *lua.LState, w *askWait, dest, topic string, timeout time.Duration, fresh bool) int {
	for ; ; fresh = false {
		var res process.Reply
		var err error
		if r, ok := w.call.Poll(); ok {
			res = r
		} else if !fresh && time.Until(w.deadline) <= 0 {
			res, err = w.call.Abandon(process.ErrTimeout)
		} else if p.stopRequested() {
			res, err = w.call.Abandon(process.ErrCallAbandoned)
		} else {
			if ret, done := p.suspendOn(L, w); done {
				return ret
			}
			continue
		}
		w.active, w.call = false, process.Call{}
		return askReturn(L, res, err, dest, topic, timeout, w)
	}
}

// askReturn pushes what process.ask returns for a wait that ended with
// res, err. w, when not nil, keeps the replier's PID value of the last
// reply: a process that asks the same replier again and again gets the
// same string, instead of formatting and boxing one per ask (two of an
// ask's allocations).
func askReturn(L *lua.LState, res process.Reply, err error, dest, topic string, timeout time.Duration, w *askWait) int {
	switch {
	case errors.Is(err, process.ErrTimeout):
		return ReturnError(L, fmt.Errorf("ask %q of %s after %s: %w", topic, dest, timeout, err))
	case errors.Is(err, process.ErrCallAbandoned):
		return ReturnError(L, errStopping)
	case err != nil:
		return ReturnError(L, err)
	}
	if res.Err != nil {
		return ReturnError(L, res.Err)
	}
	lv, err := ToLua(L, res.Value)
	if err != nil {
		return ReturnError(L, err)
	}
	if w == nil {
		return ReturnReply(L, lv, res.From)
	}
	if w.fromV == nil || w.from != res.From {
		w.from, w.fromV = res.From, PIDValue(res.From)
	}
	L.Push(lv)
	L.Push(lua.LNil)
	L.Push(w.fromV)
	return 3
}

// ReturnReply pushes what an ask returns on success: the reply, nil in the
// place of the error, and the replier's PID third, so that the Lua idiom
// `local reply, err = f(); if err then … end` holds for asks too.
func ReturnReply(L *lua.LState, reply lua.LValue, from process.PID) int {
	L.Push(reply)
	L.Push(lua.LNil)
	L.Push(PIDValue(from))
	return 3
}

type spawnMode int

const (
	spawnPlain spawnMode = iota
	spawnMonitored
	spawnLinked
)

func procSpawn(L *lua.LState) int          { return spawnWith(L, 1, spawnPlain, spawnOptions{}) }
func procSpawnMonitored(L *lua.LState) int { return spawnWith(L, 1, spawnMonitored, spawnOptions{}) }
func procSpawnLinked(L *lua.LState) int    { return spawnWith(L, 1, spawnLinked, spawnOptions{}) }

// spawnWith spawns the entry in argument at with the arguments after it,
// registered under name when it is not "". It returns once the process is
// ready (after its init, see start.go).
func spawnWith(L *lua.LState, at int, mode spawnMode, so spawnOptions) int {
	p := ProcessOf(L)
	id := string(registry.Qualify(p.entry, CheckLabel(L, at, "an entry ID")))
	var args []any
	if n := L.GetTop(); n > at {
		args = make([]any, 0, n-at)
		for i := at + 1; i <= n; i++ {
			a, err := ToGoAt(L.Get(i), fmt.Sprintf("args[%d]", i-at))
			if err != nil {
				return ReturnError(L, fmt.Errorf("spawn %s: %w", id, err))
			}
			args = append(args, a)
		}
	}
	if p.env == nil || p.env.Entries == nil {
		return ReturnError(L, value.NewError(value.KindNotFound, "spawn %s: no entries are known to this runtime", id))
	}
	opts := registry.SpawnOptions{Args: args, Upgradable: so.onReload == ReloadUpgrade}
	opts.Name = so.name
	switch mode {
	case spawnMonitored:
		opts.MonitorBy = p.self
	case spawnLinked:
		opts.LinkTo = p.self
	}
	pid, err := p.env.Entries.Spawn(registry.ID(id), opts)
	if err != nil {
		return ReturnError(L, err)
	}
	L.Push(PIDValue(pid))
	return 1
}

// pidOp runs op on the destination in argument 1 and returns true or
// nil, err.
func pidOp(L *lua.LState, op func(p *Process, pid process.PID) error) int {
	p := ProcessOf(L)
	pid, err := p.resolve(CheckDest(L, 1))
	if err != nil {
		return ReturnError(L, err)
	}
	if err := op(p, pid); err != nil {
		return ReturnError(L, err)
	}
	L.Push(lua.LTrue)
	return 1
}

func procMonitor(L *lua.LState) int {
	return pidOp(L, func(p *Process, pid process.PID) error { return p.Node().Monitor(p.self, pid) })
}

func procUnmonitor(L *lua.LState) int {
	return pidOp(L, func(p *Process, pid process.PID) error { p.Node().Demonitor(p.self, pid); return nil })
}

func procLink(L *lua.LState) int {
	return pidOp(L, func(p *Process, pid process.PID) error { return p.Node().Link(p.self, pid) })
}

func procUnlink(L *lua.LState) int {
	return pidOp(L, func(p *Process, pid process.PID) error { p.Node().Unlink(p.self, pid); return nil })
}

// procTerminate stops a process on the script's behalf: the runtime's own
// processes (supervisors, scopes, pools, the root) refuse, since their
// kinds' APIs are how a script changes them.
func procTerminate(L *lua.LState) int {
	return pidOp(L, func(p *Process, pid process.PID) error { return p.Node().TerminateFrom(p.self, pid) })
}

// procRegister names the calling process. Names shaped like entry IDs
// (namespace:entry) are the runtime's: a script holding "app:svc" while
// that entry restarts would receive its asks and make its restarts fail.
func procRegister(L *lua.LState) int {
	p := ProcessOf(L)
	name := CheckLabel(L, 1, "a name")
	if strings.Contains(name, ":") {
		return ReturnError(L, value.NewError(value.KindInvalid,
			"register %q: names with ':' are reserved for entries (namespace:entry)", name))
	}
	if err := p.Node().Register(name, p.self); err != nil {
		return ReturnError(L, err)
	}
	L.Push(lua.LTrue)
	return 1
}

func procLookup(L *lua.LState) int {
	p := ProcessOf(L)
	name := CheckLabel(L, 1, "a name")
	pid, ok := p.Node().Whereis(name)
	if !ok || !p.Node().Alive(pid) && p.Node().IsLocal(pid) {
		return ReturnError(L, fmt.Errorf("lookup %q: %w", name, process.ErrNameNotFound))
	}
	L.Push(PIDValue(pid))
	return 1
}

func procSetOptions(L *lua.LState) int {
	p := ProcessOf(L)
	t := L.CheckTable(1)
	var bad []string
	t.ForEach(func(k, v lua.LValue) {
		switch k.String() {
		case "trap_links":
			if _, ok := v.(lua.LBool); !ok {
				L.ArgError(1, "trap_links must be a boolean")
			}
			p.proc.SetTrapLinks(lua.LVAsBool(v))
		default:
			bad = append(bad, k.String())
		}
	})
	if len(bad) > 0 {
		L.ArgError(1, fmt.Sprintf("unknown option(s) %s (known: trap_links)", strings.Join(bad, ", ")))
	}
	L.Push(lua.LTrue)
	return 1
}

func procInbox(L *lua.LState) int {
	p := ProcessOf(L)
	L.Push(p.mbox.inboxChannel().Value(L))
	return 1
}

func procListen(L *lua.LState) int {
	p := ProcessOf(L)
	topic := CheckLabel(L, 1, "a topic")
	if err := process.CheckTopic("listen", topic); err != nil {
		return ReturnError(L, err)
	}
	c, err := p.mbox.listenChannel(topic)
	if err != nil {
		return ReturnError(L, err)
	}
	L.Push(c.Value(L))
	return 1
}

func procEvents(L *lua.LState) int {
	p := ProcessOf(L)
	L.Push(p.mbox.eventsChannel().Value(L))
	return 1
}
