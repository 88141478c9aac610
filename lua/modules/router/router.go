// Package router is the Lua module router: scripts' bindings over
// kinds/pool's Go API. A host loads it when its Options list Module().
package router

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/kinds/pool"
	host "github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// Module returns the router module, for lua.Options.Modules: thin
// bindings over kinds/pool's Go API. Every function takes the pool's entry
// ID first ("app:replicas", or "replicas" in the caller's namespace); a
// router.group's ID works the same way.
func Module() host.Module { return module }

var module = host.Module{
	Name: "router",
	Doc:  "Messages and asks routed through a router.pool or router.group entry.",
	Funcs: []host.Func{
		{Name: "ask", Fn: routerAsk, Doc: "Asks the router's routees (by its strategy) and waits for the reply: reply, nil, the routee that answered; or nil, err.",
			Params: "pool_id: string, payload: any, timeout?: duration", Results: "any, error?, pid?"},
		{Name: "tell", Fn: routerTell, Doc: "Sends a message through the router; with {reply_to = dest, topic = t} the reply (a scatter's outcome) arrives at dest as a message {value = reply} or {error = err}.",
			Params: "pool_id: string, payload: any, options?: reply_options", Results: "true|nil, error?"},
		{Name: "size", Fn: routerSize, Doc: "How many routees the router has.",
			Params: "pool_id: string", Results: "integer|nil, error?"},
		{Name: "routees", Fn: routerRoutees, Doc: "The routees' PIDs.",
			Params: "pool_id: string", Results: "pid[]|nil, error?"},
	},
}

// checkPool resolves argument 1 to a running router (a router.pool or a
// router.group). A non-string raises; an unknown or stopped router, or an
// entry of another kind, is returned as an error for nil, err.
func checkPool(L *lua.LState) (*host.Process, pool.Router, error) {
	p := host.ProcessOf(L)
	ref := registry.Qualify(p.Entry(), host.CheckLabel(L, 1, "a router (its entry ID)"))
	pl, err := registry.Find[pool.Router](p.Env(), "router", string(ref), pool.KindName, pool.GroupKindName)
	return p, pl, err
}

// router.ask(pool_id, payload [, timeout]) --> reply, nil, sender_pid | nil, err
//
// Without a timeout the caller waits the larger of 5s and the pool's
// timeout plus 500ms, so it still listens when a scatter reports which
// routees failed. The sender is the routee that answered.
func routerAsk(L *lua.LState) int {
	p, pl, err := checkPool(L)
	timeout := host.OptDuration(L, 3, 0)
	if L.Get(3) != lua.LNil && timeout <= 0 {
		L.ArgError(3, "timeout must be positive")
	}
	if err != nil {
		return host.ReturnError(L, err)
	}
	payload, err := host.PayloadArg(L, 2)
	if err != nil {
		return host.ReturnError(L, fmt.Errorf("router.ask %s: %w", pl.ID(), err))
	}
	m := process.Message{From: p.PID(), Topic: pool.Topic, Payload: payload}
	v, from, err := pl.AskContext(p.Context(), m, timeout)
	if err != nil {
		return host.ReturnError(L, err)
	}
	lv, err := host.ToLua(L, v)
	if err != nil {
		return host.ReturnError(L, err)
	}
	return host.ReturnReply(L, lv, from)
}

// router.tell(pool_id, payload [, {reply_to = dest, topic = t}]) --> true | nil, err
//
// With reply_to the router treats the tell as an ask whose reply is sent
// to dest as a message (a scatter pool scatters it and sends the outcome):
// the seed's "tell with an explicit sender", a hedged read that does not
// block the caller.
func routerTell(L *lua.LState) int {
	p, pl, err := checkPool(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	payload, err := host.PayloadArg(L, 2)
	if err != nil {
		return host.ReturnError(L, fmt.Errorf("router.tell %s: %w", pl.ID(), err))
	}
	m, err := host.ReplyToArg(L, 3, "router.tell", process.Message{From: p.PID(), Topic: pool.Topic, Payload: payload})
	if err != nil {
		return host.ReturnError(L, err)
	}
	if err := pl.Send(m); err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(lua.LTrue)
	return 1
}

// router.size(pool_id) --> n | nil, err
func routerSize(L *lua.LState) int {
	_, pl, err := checkPool(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(lua.LNumber(pl.Size()))
	return 1
}

// router.routees(pool_id) --> {pid, …} | nil, err
func routerRoutees(L *lua.LState) int {
	_, pl, err := checkPool(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	pids := pl.Routees()
	t := L.CreateTable(len(pids), 0)
	for _, s := range pids {
		t.Append(lua.LString(s))
	}
	L.Push(t)
	return 1
}
