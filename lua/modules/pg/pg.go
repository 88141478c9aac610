// Package pg is the Lua module pg: scripts' bindings over kinds/pgscope's
// Go API. A host loads it when its Options list Module().
package pg

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/kinds/pgscope"
	host "github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// Module returns the pg module, for lua.Options.Modules: thin bindings
// over kinds/pgscope's Go API.
//
//	local pg = require("pg")
//	local scope, err = pg.open("app:pg")
//	scope:join(group_or_list) ; scope:leave(group_or_list)
//	scope:get_members(g) ; scope:get_local_members(g)
//	scope:which_groups() ; scope:which_local_groups()
//	scope:broadcast(g, topic [, payload]) ; scope:broadcast_local(g, topic [, payload])
//	local sub, members = scope:monitor(g) ; local sub, snapshot = scope:events()
//	sub:channel():receive() --> {kind=, group=, pids={...}} ; sub:close([{flush=true}])
//
// Operational failures are nil, err; wrong argument types raise. Calls that
// wait for the scope stop waiting when the process is asked to stop.
func Module() host.Module { return module }

var module = host.Module{
	Name: "pg",
	Doc:  "Process groups: join, leave, members, broadcasts and membership events of a pg.scope entry.",
	Funcs: []host.Func{
		{Name: "open", Fn: pgOpen, Doc: "The running pg.scope entry with this ID (\"app:pg\", or \"pg\" in the caller's namespace).",
			Params: "scope_id: string", Results: "pg.scope|nil, error?"},
	},
	Types: []*host.Type{scopeType, subType},
}

// scopeType is a script's scope handle; subType a subscription's.
var scopeType = host.NewType("pg.scope",
	host.Func{Name: "join", Fn: pgJoin, Doc: "Joins this process to a group or a list of groups (once more per call).",
		Params: "groups: string|string[]", Results: "true|nil, error?"},
	host.Func{Name: "leave", Fn: pgLeave, Doc: "Leaves a group or a list of groups once (kind not_joined when not a member).",
		Params: "groups: string|string[]", Results: "true|nil, error?"},
	host.Func{Name: "get_members", Fn: pgGetMembers, Doc: "The group's members on every node, one PID per join.",
		Params: "group: string", Results: "pid[]|nil, error?"},
	host.Func{Name: "get_local_members", Fn: pgGetLocalMembers, Doc: "The group's members on this node, one PID per join.",
		Params: "group: string", Results: "pid[]|nil, error?"},
	host.Func{Name: "which_groups", Fn: pgWhichGroups, Doc: "The groups with members.", Results: "string[]|nil, error?"},
	host.Func{Name: "which_local_groups", Fn: pgWhichLocalGroups, Doc: "The groups with members on this node.", Results: "string[]|nil, error?"},
	host.Func{Name: "broadcast", Fn: pgBroadcast, Doc: "Sends a message to each distinct member of the group; returns how many it reached.",
		Params: "group: string, topic: string, payload?: any", Results: "integer|nil, error?"},
	host.Func{Name: "broadcast_local", Fn: pgBroadcastLocal, Doc: "broadcast to the members on this node only.",
		Params: "group: string, topic: string, payload?: any", Results: "integer|nil, error?"},
	host.Func{Name: "monitor", Fn: pgMonitor, Doc: "Subscribes to the group's joins and leaves; returns the subscription and the members now.",
		Params: "group: string", Results: "pg.subscription|nil, pid[]|error"},
	host.Func{Name: "events", Fn: pgEvents, Doc: "Subscribes to every group's joins and leaves; returns the subscription and a snapshot.",
		Results: "pg.subscription|nil, table|error"},
	host.Func{Name: "id", Fn: pgScopeID, Doc: "The scope's entry ID.", Results: "string"},
	host.Func{Name: "__tostring", Fn: pgScopeToString, Doc: "pg.scope ID", Results: "string"},
)

var subType = host.NewType("pg.subscription",
	host.Func{Name: "channel", Fn: pgSubChannel, Doc: "The channel events arrive on: {kind=, group=, pids={...}}.", Results: "channel"},
	host.Func{Name: "close", Fn: pgSubClose, Doc: "Ends the subscription; with {flush = true} events still queued are dropped.",
		Params: "options?: table", Results: "true"},
	host.Func{Name: "dropped", Fn: pgSubDropped, Doc: "How many events this subscription lost to a full buffer.", Results: "integer"},
	host.Func{Name: "__tostring", Fn: pgSubToString, Doc: "pg subscription (monitor GROUP) or (events)", Results: "string"},
)

// pgHandle is a script's scope: the entry ID and the scope last found for
// it. A restarted entry is a new *Scope, so a stopped one is looked up
// again rather than failing every call from then on.
type pgHandle struct {
	id registry.ID
	s  *pgscope.Scope
}

func (h *pgHandle) scope(p *host.Process) (*pgscope.Scope, error) {
	if h.s != nil && !h.s.Stopped() {
		return h.s, nil
	}
	s, err := registry.Find[*pgscope.Scope](p.Env(), "pg scope", string(h.id), pgscope.KindName)
	if err != nil {
		return nil, err
	}
	h.s = s
	return s, nil
}

// pg.open(id) --> scope | nil, err
func pgOpen(L *lua.LState) int {
	p := host.ProcessOf(L)
	h := &pgHandle{id: registry.Qualify(p.Entry(), host.CheckLabel(L, 1, "a pg.scope entry ID"))}
	if _, err := h.scope(p); err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(scopeType.New(L, h))
	return 1
}

func checkPGHandle(L *lua.LState) *pgHandle {
	ud := L.CheckUserData(1)
	h, ok := ud.Value.(*pgHandle)
	if !ok {
		L.ArgError(1, "pg scope expected (call methods with a colon: scope:join(g))")
	}
	return h
}

// pgCall resolves the scope of a method call.
func pgCall(L *lua.LState) (*host.Process, *pgscope.Scope, error) {
	h := checkPGHandle(L)
	p := host.ProcessOf(L)
	s, err := h.scope(p)
	return p, s, err
}

// groupsArg reads a group name or a list of group names.
func groupsArg(L *lua.LState, n int) []string {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return []string{string(v)}
	case *lua.LTable:
		out := make([]string, 0, v.Len())
		for i := 1; i <= v.Len(); i++ {
			s, ok := v.RawGetInt(i).(lua.LString)
			if !ok {
				L.ArgError(n, fmt.Sprintf("group list item %d must be a string, got %s", i, v.RawGetInt(i).Type()))
			}
			out = append(out, string(s))
		}
		return out
	default:
		L.ArgError(n, "group name or list of group names expected, got "+L.Get(n).Type().String())
	}
	return nil
}

func pgReturnTrue(L *lua.LState, err error) int {
	if err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(lua.LTrue)
	return 1
}

// scope:join(group_or_list) --> true | nil, err
func pgJoin(L *lua.LState) int {
	groups := groupsArg(L, 2)
	p, s, err := pgCall(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	return pgReturnTrue(L, s.JoinContext(p.Context(), p.PID(), groups...))
}

// scope:leave(group_or_list) --> true | nil, err (kind not_joined)
func pgLeave(L *lua.LState) int {
	groups := groupsArg(L, 2)
	p, s, err := pgCall(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	return pgReturnTrue(L, s.LeaveContext(p.Context(), p.PID(), groups...))
}

func pidList(L *lua.LState, pids []process.PID) *lua.LTable {
	t := L.CreateTable(len(pids), 0)
	for _, pid := range pids {
		t.Append(host.PIDValue(pid))
	}
	return t
}

func stringList(L *lua.LState, ss []string) *lua.LTable {
	t := L.CreateTable(len(ss), 0)
	for _, s := range ss {
		t.Append(lua.LString(s))
	}
	return t
}

// scope:get_members(group) --> {pid, ...} | nil, err
func pgGetMembers(L *lua.LState) int {
	g := host.CheckLabel(L, 2, "a group name")
	_, s, err := pgCall(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	// The table is built from the scope's version of the group in place:
	// the script's table is the only copy.
	m := s.Members(g)
	t := L.CreateTable(m.Len(), 0)
	for pid := range m.All() {
		t.Append(host.PIDValue(pid))
	}
	L.Push(t)
	return 1
}

// scope:get_local_members(group) --> {pid, ...} | nil, err
func pgGetLocalMembers(L *lua.LState) int {
	g := host.CheckLabel(L, 2, "a group name")
	_, s, err := pgCall(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(pidList(L, s.GetLocalMembers(g)))
	return 1
}

// scope:which_groups() --> {group, ...} | nil, err
func pgWhichGroups(L *lua.LState) int {
	_, s, err := pgCall(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(stringList(L, s.WhichGroups()))
	return 1
}

// scope:which_local_groups() --> {group, ...} | nil, err
func pgWhichLocalGroups(L *lua.LState) int {
	_, s, err := pgCall(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(stringList(L, s.WhichLocalGroups()))
	return 1
}

func pgBroadcastWith(L *lua.LState, local bool) int {
	g := host.CheckLabel(L, 2, "a group name")
	topic := host.CheckLabel(L, 3, "a topic")
	payload, err := host.ToGoAt(L.Get(4), "payload")
	if err != nil {
		return host.ReturnError(L, err)
	}
	p, s, err := pgCall(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	var n int
	if local {
		n, err = s.BroadcastLocalContext(p.Context(), p.PID(), g, topic, payload)
	} else {
		n, err = s.BroadcastContext(p.Context(), p.PID(), g, topic, payload)
	}
	if err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(lua.LNumber(n))
	return 1
}

// scope:broadcast(group, topic [, payload]) --> number reached | nil, err
func pgBroadcast(L *lua.LState) int { return pgBroadcastWith(L, false) }

// scope:broadcast_local(group, topic [, payload]) --> number reached | nil, err
func pgBroadcastLocal(L *lua.LState) int { return pgBroadcastWith(L, true) }

// pgSub is a script's subscription: the scope's subscription delivering
// into a channel of the script, bounded by the scope's monitor_buffer.
type pgSub struct {
	sub *pgscope.Subscription
	ch  *host.Channel
}

// pgSink adapts a script channel to pgscope.Sink. Events become plain
// tables ({kind=, group=, pids={...}}), converted on receipt from the
// event's value, which the scope builds once for all its subscribers.
type pgSink struct{ ch *host.Channel }

func (k pgSink) Offer(ev pgscope.Event) bool { return k.ch.Offer(ev.Value()) }

func (k pgSink) Close() { k.ch.Close() }

// newPGSub is a script's subscription, closed when the process upgrades
// its code: its handle is a value of the old state, which the new code
// cannot reach (docs/reload.md#hot-upgrade).
func newPGSub(p *host.Process, sub *pgscope.Subscription, ch *host.Channel) *pgSub {
	s := &pgSub{sub: sub, ch: ch}
	p.OnUpgrade(s, func() { sub.Close(true) })
	return s
}

func pgSubValue(L *lua.LState, s *pgSub) lua.LValue {
	return subType.New(L, s)
}

// scope:monitor(group) --> sub, {pid, ...} | nil, err
func pgMonitor(L *lua.LState) int {
	g := host.CheckLabel(L, 2, "a group name")
	p, s, err := pgCall(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	ch := p.NewChannel(s.Spec().MonitorBuffer)
	sub, members, err := s.Subscribe(g, pgscope.SubscribeOptions{Owner: p.PID(), Sink: pgSink{ch}, Context: p.Context()})
	if err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(pgSubValue(L, newPGSub(p, sub, ch)))
	L.Push(pidList(L, members))
	return 2
}

// scope:events() --> sub, {group = {pid, ...}, ...} | nil, err
func pgEvents(L *lua.LState) int {
	p, s, err := pgCall(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	ch := p.NewChannel(s.Spec().MonitorBuffer)
	sub, snap, err := s.SubscribeAll(pgscope.SubscribeOptions{Owner: p.PID(), Sink: pgSink{ch}, Context: p.Context()})
	if err != nil {
		return host.ReturnError(L, err)
	}
	ps := newPGSub(p, sub, ch)
	t := L.CreateTable(0, len(snap))
	for g, pids := range snap {
		t.RawSetString(g, pidList(L, pids))
	}
	L.Push(pgSubValue(L, ps))
	L.Push(t)
	return 2
}

// scope:id() --> the scope's entry ID
func pgScopeID(L *lua.LState) int {
	L.Push(lua.LString(checkPGHandle(L).id))
	return 1
}

func pgScopeToString(L *lua.LState) int {
	L.Push(lua.LString("pg.scope " + string(checkPGHandle(L).id)))
	return 1
}

func checkPGSub(L *lua.LState) *pgSub {
	ud := L.CheckUserData(1)
	s, ok := ud.Value.(*pgSub)
	if !ok {
		L.ArgError(1, "pg subscription expected (call methods with a colon: sub:close())")
	}
	return s
}

// sub:channel() --> the channel events arrive on
func pgSubChannel(L *lua.LState) int {
	s := checkPGSub(L)
	L.Push(s.ch.Value(L))
	return 1
}

// sub:close([{flush=true}]) --> true. Without flush, events already
// queued stay receivable before the channel reports closed; with flush they
// are discarded.
func pgSubClose(L *lua.LState) int {
	s := checkPGSub(L)
	flush := false
	if opts, ok := L.Get(2).(*lua.LTable); ok {
		flush = lua.LVAsBool(opts.RawGetString("flush"))
	} else if L.Get(2) != lua.LNil {
		L.ArgError(2, "options table expected, got "+L.Get(2).Type().String())
	}
	s.sub.Close(flush)
	host.ProcessOf(L).OnUpgrade(s, nil)
	if flush {
		s.ch.Discard()
	}
	L.Push(lua.LTrue)
	return 1
}

// sub:dropped() --> how many events this subscription lost to a full buffer
func pgSubDropped(L *lua.LState) int {
	L.Push(lua.LNumber(checkPGSub(L).sub.Dropped()))
	return 1
}

func pgSubToString(L *lua.LState) int {
	s := checkPGSub(L)
	what := "events"
	if g, ok := s.sub.Group(); ok {
		what = "monitor " + g
	}
	L.Push(lua.LString("pg subscription (" + what + ")"))
	return 1
}
