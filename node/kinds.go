package node

import (
	"io"

	httpkind "github.com/proctor-run/proctor/kinds/http"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/kinds/pool"
	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/lua"
	luapg "github.com/proctor-run/proctor/lua/modules/pg"
	luarouter "github.com/proctor-run/proctor/lua/modules/router"
	luasupervisor "github.com/proctor-run/proctor/lua/modules/supervisor"
	"github.com/proctor-run/proctor/registry"
)

// DefaultKinds registers every kind Proctor ships, and gives the Lua host
// the modules that bind them, then modules, a program's own (the Lua host
// takes its modules when it is made, so this is where they go); Lua's
// print writes to stdout. A program's own kinds it registers in the
// registry returned, before it loads a configuration with it. The pg
// scopes need no cluster here: a node in a cluster hands them its pg
// distribution when they start (registry.Env.Cluster).
func DefaultKinds(stdout io.Writer, modules ...lua.Module) *registry.Registry {
	r := registry.NewRegistry()
	r.Register(lua.NewKind(lua.Options{
		Stdout:  stdout,
		Modules: append([]lua.Module{luapg.Module(), luarouter.Module(), luasupervisor.Module()}, modules...),
	}))
	r.Register(pgscope.Kind{})
	r.Register(pool.Kind{})
	r.Register(pool.GroupKind{})
	r.Register(supervisor.NewStaticKind())
	r.Register(supervisor.NewDynamicKind())
	r.Register(supervisor.NewPartitionKind())
	r.Register(httpkind.ServerKind{})
	r.Register(httpkind.RouteKind{})
	return r
}

// LuaHost returns the Lua host registered in kinds (the process.lua
// kind), nil when there is none.
func LuaHost(kinds *registry.Registry) *lua.Host {
	k, _ := kinds.Kind(lua.KindName)
	h, _ := k.(*lua.Host)
	return h
}
