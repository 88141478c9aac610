// Package modtest runs configurations with the real registry runtime, the
// root supervisor and every kind, for the tests of the Lua modules that
// need entries of several kinds at once.
package modtest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/kinds/pool"
	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/lua/internal/luatest"
	luapg "github.com/proctor-run/proctor/lua/modules/pg"
	luarouter "github.com/proctor-run/proctor/lua/modules/router"
	luasupervisor "github.com/proctor-run/proctor/lua/modules/supervisor"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

// Modules are the runtime modules cmd/runner gives its host.
func Modules() []lua.Module {
	return []lua.Module{luapg.Module(), luarouter.Module(), luasupervisor.Module()}
}

// Runtime writes files into a directory and runs the config with the real
// registry runtime, every kind and the root supervisor; stop tears it all
// down and checks that no process is left.
func Runtime(t *testing.T, files map[string]string) (rt *runtime.Runtime, node *process.Node, stop func()) {
	t.Helper()
	dir := luatest.WriteFiles(t, files)
	kinds := registry.NewRegistry()
	kinds.Register(lua.NewKind(lua.Options{Stdout: io.Discard, Modules: Modules()}))
	kinds.Register(pgscope.Kind{})
	kinds.Register(pool.Kind{})
	kinds.Register(pool.GroupKind{})
	for _, k := range supervisor.SupervisorKinds() {
		kinds.Register(k)
	}
	cfg, err := (&config.Loader{Kinds: kinds}).Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	node = process.NewNode(process.Options{Name: "t", Logger: logger})
	rt = runtime.NewRuntime(runtime.RuntimeOptions{Node: node, Kinds: kinds, Logger: logger, StopTimeout: 5 * time.Second})
	root, err := supervisor.StartRoot(supervisor.RootOptions{Node: node, Runtime: rt, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	rt.SetOwner(root)
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return rt, node, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Stop(ctx)
		_ = root.Stop(ctx)
		testutil.EventuallyWithin(t, 5*time.Second, "every process to exit", func() bool { return node.Count() == 0 })
	}
}

// RunMain spawns app:main and returns its exit. A watcher monitors it from
// before it runs, so a main that ends at once is not missed.
func RunMain(t *testing.T, rt *runtime.Runtime, node *process.Node, d time.Duration) process.Exit {
	t.Helper()
	exits := make(chan process.Exit, 1)
	watcher, err := node.SpawnFunc(func(p *process.Proc) (any, error) {
		for {
			if e, ok := p.TryEvent(); ok {
				exits <- e.Exit
				return nil, nil
			}
			p.Arm()
			if p.PendingEvents() > 0 {
				p.Disarm()
				continue
			}
			select {
			case <-p.Wake():
			case <-p.Context().Done():
				return nil, nil
			}
		}
	}, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Terminate(watcher)
	if _, err := rt.Spawn("app:main", registry.SpawnOptions{SpawnOptions: process.SpawnOptions{MonitorBy: watcher}}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-exits:
		return e
	case <-time.After(d):
		t.Fatal("main did not finish")
	}
	return process.Exit{}
}
