package main

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

// newKinds registers every kind the runner knows, and gives the Lua host
// the modules that bind them. pg distributes the pg scopes (nil: each
// node's alone).
func newKinds(stdout io.Writer, pg pgscope.Distributor) *registry.Registry {
	r := registry.NewRegistry()
	r.Register(lua.NewKind(lua.Options{
		Stdout:  stdout,
		Modules: []lua.Module{luapg.Module(), luarouter.Module(), luasupervisor.Module()},
	}))
	r.Register(pgscope.Kind{Distributor: pg})
	r.Register(pool.Kind{})
	r.Register(pool.GroupKind{})
	r.Register(supervisor.NewStaticKind())
	r.Register(supervisor.NewDynamicKind())
	r.Register(supervisor.NewPartitionKind())
	r.Register(httpkind.ServerKind{})
	r.Register(httpkind.RouteKind{})
	return r
}

// hostOf returns the Lua host registered in kinds.
func hostOf(kinds *registry.Registry) *lua.Host {
	k, _ := kinds.Kind(lua.KindName)
	return k.(*lua.Host)
}
