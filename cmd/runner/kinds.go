package main

import (
	"io"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/kinds/pool"
	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/registry"
)

// newKinds registers every kind the runner knows.
func newKinds(stdout io.Writer) *registry.Registry {
	r := registry.NewRegistry()
	r.Register(lua.NewKind(lua.Options{Stdout: stdout}))
	r.Register(pgscope.Kind{})
	r.Register(pool.Kind{})
	r.Register(pool.GroupKind{})
	r.Register(supervisor.NewStaticKind())
	r.Register(supervisor.NewDynamicKind())
	r.Register(supervisor.NewPartitionKind())
	return r
}
