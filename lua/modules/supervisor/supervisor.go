// Package supervisor is the Lua module supervisor: scripts' bindings over
// kinds/supervisor's Go API. A host loads it when its Options list
// Module().
package supervisor

import (
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"

	// The kind this module binds; the package shares its name.
	"github.com/proctor-run/proctor/kinds/supervisor"
	host "github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Module returns the supervisor module, for lua.Options.Modules: thin
// bindings over kinds/supervisor's Go API. Every function takes the
// supervisor first, as an entry ID ("app:core", or "core" in the caller's
// namespace) or a PID string (a nested tree).
func Module() host.Module { return module }

var module = host.Module{
	Name: "supervisor",
	Doc:  "Children of supervisor entries: start, terminate, list, count, and partition routing.",
	Funcs: []host.Func{
		{Name: "start_child", Fn: supStartChild, Doc: "Starts a child from a spec {id=, process=, name=, restart=, args=, shutdown=, on_failure=, on_reload=}; returns once its init has returned.",
			Params: "sup: string, spec: supervisor.child_spec", Results: "pid|nil, error?"},
		{Name: "terminate_child", Fn: supTerminateChild, Doc: "Stops a child and removes its spec.",
			Params: "sup: string, child_id: string", Results: "true|nil, error?"},
		{Name: "which_children", Fn: supWhichChildren, Doc: "The children in start order: {id=, pid=, process=, restart=, type=, status=, restarts=}.",
			Params: "sup: string", Results: "supervisor.child[]|nil, error?"},
		{Name: "count_children", Fn: supCountChildren, Doc: "Counts of the children: {specs=, active=, supervisors=, workers=}.",
			Params: "sup: string", Results: "supervisor.counts|nil, error?"},
		{Name: "route", Fn: supRoute, Doc: "The PID of the partition worker that owns a key.",
			Params: "sup: string, key: string|number|table", Results: "pid|nil, error?"},
		{Name: "send", Fn: supSend, Doc: "Sends a message to the partition worker that owns the payload's key.",
			Params: "sup: string, topic: string, payload: any", Results: "true|nil, error?"},
	},
	Shapes: []host.Shape{
		{Name: "supervisor.child_spec", Doc: "A child for start_child.", Fields: []host.Field{
			{Name: "id", Type: "string|number", Doc: "The child's ID in its supervisor (a number is turned into a string)."},
			{Name: "process", Type: "string", Doc: "The process.lua or supervisor entry it runs."},
			{Name: "name", Type: "string", Optional: true, Doc: "A name registered for the child before it runs, and again at each restart."},
			{Name: "restart", Type: `"permanent"|"transient"|"temporary"`, Optional: true, Doc: "When it is restarted: permanent (default), transient (after an abnormal exit), temporary (never)."},
			{Name: "args", Type: "any[]", Optional: true, Doc: "The arguments of its method; absent: the entry's own args."},
			{Name: "shutdown", Type: `duration|"brutal_kill"|"infinity"`, Optional: true, Doc: "How long it has to stop before it is killed."},
			{Name: "on_failure", Type: `"restart"|"stop"|"escalate"|"resume"`, Optional: true, Doc: "What its failure does: restart (default), stop, escalate or resume."},
			{Name: "on_reload", Type: `"restart"|"keep"|"upgrade"`, Optional: true, Doc: "A reload that changes its entry: restart it on the new code, keep its code, or upgrade it in place (same PID and mailbox; see process.upgrade). Default: as its entry's on_reload says (restart unless it says upgrade)."},
		}},
		{Name: "supervisor.child", Doc: "A row of which_children.", Fields: []host.Field{
			{Name: "id", Type: "string", Doc: "The child's ID."},
			{Name: "pid", Type: "pid", Optional: true, Doc: "Its process; absent while it is not running."},
			{Name: "process", Type: "string", Doc: "The entry it runs."},
			{Name: "restart", Type: `"permanent"|"transient"|"temporary"`, Doc: "Its restart type."},
			{Name: "type", Type: `"worker"|"supervisor"`, Doc: "A worker, or a nested supervisor."},
			{Name: "status", Type: "string", Doc: "running, restarting, terminated, …"},
			{Name: "restarts", Type: "integer", Doc: "How often it was restarted."},
		}},
		{Name: "supervisor.counts", Doc: "What count_children returns.", Fields: []host.Field{
			{Name: "specs", Type: "integer", Doc: "Children with a spec."},
			{Name: "active", Type: "integer", Doc: "Children running."},
			{Name: "supervisors", Type: "integer", Doc: "Children that are supervisors."},
			{Name: "workers", Type: "integer", Doc: "Children that are workers."},
		}},
	},
}

func checkSupervisor(L *lua.LState) (*host.Process, *supervisor.Supervisor, error) {
	p := host.ProcessOf(L)
	s, err := findSupervisor(p, host.CheckLabel(L, 1, "a supervisor (its entry ID or PID)"))
	return p, s, err
}

// findSupervisor resolves ref, an entry ID (bare in the caller's
// namespace) or a PID string (a nested tree).
func findSupervisor(p *host.Process, ref string) (*supervisor.Supervisor, error) {
	id := registry.Qualify(p.Entry(), ref)
	return registry.Find[*supervisor.Supervisor](p.Env(), "supervisor", string(id), supervisor.KindStatic, supervisor.KindDynamic, supervisor.KindPartition)
}

// supervisor.start_child(sup, {id=, process=, restart=, args={…},
// shutdown=, on_failure=, on_reload=, name=}) --> pid | nil, err, once
// the child's init (if it has one) has returned
func supStartChild(L *lua.LState) int {
	p := host.ProcessOf(L)
	ref := host.CheckLabel(L, 1, "a supervisor (its entry ID or PID)")
	spec, err := childSpecArg(L, p, 2)
	if err != nil {
		return host.ReturnError(L, err)
	}
	s, err := findSupervisor(p, ref)
	if err != nil {
		return host.ReturnError(L, err)
	}
	pid, err := s.StartChild(p.Context(), spec)
	if err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(host.PIDValue(pid))
	return 1
}

// childSpecArg reads a child spec table; fields of the wrong type raise,
// unknown values of the right type are the supervisor's invalid error, and
// args that cannot cross a process boundary are an invalid error returned
// (as for process.spawn).
func childSpecArg(L *lua.LState, p *host.Process, n int) (supervisor.ChildSpec, error) {
	t := L.CheckTable(n)
	var c supervisor.ChildSpec
	str := func(field string) string {
		switch v := t.RawGetString(field).(type) {
		case *lua.LNilType:
			return ""
		case lua.LString:
			return string(v)
		default:
			L.ArgError(n, fmt.Sprintf("field %s must be a string, got %s", field, v.Type()))
		}
		return ""
	}
	if num, ok := t.RawGetString("id").(lua.LNumber); ok {
		c.ID = num.String()
	} else {
		c.ID = str("id")
	}
	c.Process = registry.Qualify(p.Entry(), str("process"))
	c.Name = str("name")
	c.Restart = supervisor.RestartType(str("restart"))
	c.OnFailure = supervisor.FailureAction(str("on_failure"))
	c.OnReload = supervisor.ReloadAction(str("on_reload"))
	switch v := t.RawGetString("args").(type) {
	case *lua.LNilType:
	case *lua.LTable:
		args, err := host.ToGoAt(v, "args")
		if err != nil {
			return c, fmt.Errorf("start_child %s: %w", c.ID, err)
		}
		switch a := args.(type) {
		case []any:
			c.Args = a
		case map[string]any:
			if len(a) != 0 {
				L.ArgError(n, "field args must be a list")
			}
			c.Args = []any{}
		default:
			c.Args = []any{}
		}
	default:
		L.ArgError(n, "field args must be a list, got "+v.Type().String())
	}
	switch v := t.RawGetString("shutdown").(type) {
	case *lua.LNilType:
	case lua.LNumber:
		if !(v > 0) { // NaN too
			L.ArgError(n, "field shutdown must be positive")
		}
		c.Shutdown = host.Millis(float64(v))
	case lua.LString:
		switch string(v) {
		case "brutal_kill":
			c.Shutdown = supervisor.BrutalKill
		case "infinity":
			c.Shutdown = supervisor.Infinity
		default:
			d, err := time.ParseDuration(string(v))
			if err != nil || d <= 0 {
				L.ArgError(n, fmt.Sprintf("field shutdown: %q is not a positive duration, \"brutal_kill\" or \"infinity\"", string(v)))
			}
			c.Shutdown = d
		}
	default:
		L.ArgError(n, "field shutdown must be milliseconds or a string, got "+v.Type().String())
	}
	return c, nil
}

// supervisor.terminate_child(sup, child_id) --> true | nil, err
func supTerminateChild(L *lua.LState) int {
	p, s, err := checkSupervisor(L)
	id := L.CheckString(2)
	if err != nil {
		return host.ReturnError(L, err)
	}
	if err := s.TerminateChild(p.Context(), id); err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(lua.LTrue)
	return 1
}

// supervisor.which_children(sup) --> {{id=, pid=|nil, restart=, type=,
// status=, restarts=}, …} in start order
func supWhichChildren(L *lua.LState) int {
	_, s, err := checkSupervisor(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	kids := s.WhichChildren()
	out := L.CreateTable(len(kids), 0)
	for _, c := range kids {
		row := L.CreateTable(0, 7)
		row.RawSetString("id", lua.LString(c.ID))
		if !c.PID.IsZero() {
			row.RawSetString("pid", host.PIDValue(c.PID))
		}
		row.RawSetString("process", lua.LString(c.Process))
		row.RawSetString("restart", lua.LString(c.Restart))
		row.RawSetString("type", lua.LString(c.Type))
		row.RawSetString("status", lua.LString(c.Status))
		row.RawSetString("restarts", lua.LNumber(c.Restarts))
		out.Append(row)
	}
	L.Push(out)
	return 1
}

// supervisor.count_children(sup) --> {specs=, active=, supervisors=, workers=}
func supCountChildren(L *lua.LState) int {
	_, s, err := checkSupervisor(L)
	if err != nil {
		return host.ReturnError(L, err)
	}
	c := s.CountChildren()
	out := L.CreateTable(0, 4)
	out.RawSetString("specs", lua.LNumber(c.Specs))
	out.RawSetString("active", lua.LNumber(c.Active))
	out.RawSetString("supervisors", lua.LNumber(c.Supervisors))
	out.RawSetString("workers", lua.LNumber(c.Workers))
	L.Push(out)
	return 1
}

// keyArg reads argument n as a partition key without copying strings and
// numbers; tables are copied (their key field decides).
func keyArg(L *lua.LState, n int) (any, error) {
	switch v := L.CheckAny(n).(type) {
	case lua.LString:
		return string(v), nil
	case lua.LNumber:
		return float64(v), nil
	case *lua.LTable:
		return host.ToGoAt(v, "key")
	default:
		return nil, value.NewError(value.KindInvalid, "partition key must be a string, a number or a table with a key field, got %s", v.Type())
	}
}

// supervisor.route(sup, key) --> pid of the worker that owns key | nil, err
func supRoute(L *lua.LState) int {
	_, s, err := checkSupervisor(L)
	key, kerr := keyArg(L, 2)
	if err != nil {
		return host.ReturnError(L, err)
	}
	if kerr != nil {
		return host.ReturnError(L, kerr)
	}
	pid, err := s.Route(key)
	if err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(host.PIDValue(pid))
	return 1
}

// supervisor.send(sup, topic, payload) --> true | nil, err: to the worker
// that owns the payload's key (its key field, or the payload itself when
// it is a string or a number).
func supSend(L *lua.LState) int {
	p, s, err := checkSupervisor(L)
	topic := host.CheckLabel(L, 2, "a topic")
	payload, perr := host.PayloadArg(L, 3)
	if err != nil {
		return host.ReturnError(L, err)
	}
	if perr != nil {
		return host.ReturnError(L, perr)
	}
	if err := s.Send(p.PID(), topic, payload); err != nil {
		return host.ReturnError(L, err)
	}
	L.Push(lua.LTrue)
	return 1
}
