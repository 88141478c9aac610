package lua_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	glua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/lua"
	luapg "github.com/proctor-run/proctor/lua/modules/pg"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

// askService writes config (app.yaml) and script (svc.lua) to a directory,
// loads them with kinds, starts them, asks the service app:svc once from
// Go, as any process would, and stops it all.
func askService(kinds *registry.Registry, yamlText, script string, payload any) (any, error) {
	dir, err := os.MkdirTemp("", "embed")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for name, text := range map[string]string{"app.yaml": yamlText, "svc.lua": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	cfg, err := (&config.Loader{Kinds: kinds}).Load(dir)
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.DiscardHandler)
	node := process.NewNode(process.Options{Name: "embed", Logger: logger})
	rt := runtime.NewRuntime(runtime.RuntimeOptions{Node: node, Kinds: kinds, Logger: logger})
	ctx := context.Background()
	if err := rt.Start(ctx, cfg); err != nil {
		return nil, err
	}
	defer rt.Stop(ctx)
	pid, err := node.Resolve("app:svc") // an auto_start entry is registered under its ID
	if err != nil {
		return nil, err
	}
	reply, _, err := node.Ask(pid, process.Message{Topic: "ask", Payload: payload}, time.Second)
	return reply, err
}

// svcConfig is a configuration of one service, app:svc.
const svcConfig = `namespace: app
entries:
  - name: svc
    kind: process.lua
    source: file://svc.lua
    lifecycle: {auto_start: true}
`

// A host with no module but the built-in json: its scripts reach no kind.
func ExampleNewKind() {
	kinds := registry.NewRegistry()
	kinds.Register(lua.NewKind(lua.Options{})) // no Modules
	reply, err := askService(kinds, svcConfig, `
local json = require("json")             -- built into every host
return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    local has_pg = pcall(require, "pg")  -- not given to this host
    msg:reply(json.encode({hello = msg:payload(), pg = has_pg}))
  end
end }`, "world")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply)
	// Output: {"hello":"world","pg":false}
}

// A host with only the pg module, next to the pg.scope kind it binds.
func ExampleNewKind_onlyPG() {
	kinds := registry.NewRegistry()
	kinds.Register(lua.NewKind(lua.Options{Modules: []lua.Module{luapg.Module()}}))
	kinds.Register(pgscope.Kind{})
	reply, err := askService(kinds, `namespace: app
entries:
  - name: pg
    kind: pg.scope
  - name: svc
    kind: process.lua
    source: file://svc.lua
    lifecycle: {auto_start: true, depends_on: [pg]}
`, `
local pg = require("pg")
return { main = function()
  local scope = assert(pg.open("pg"))    -- app:pg
  assert(scope:join("workers"))
  local msg = process.inbox():receive()
  local has_router = pcall(require, "router")
  msg:reply({members = #scope:get_members(msg:payload()), router = has_router})
end }`, "workers")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply)
	// Output: map[members:1 router:false]
}

var errNoName = errors.New("a name is required")

// A module of the embedder's own: declared once, each function with its
// description and signature, and given to the host in Options.Modules. Its
// functions are shared by every process: they find their caller with
// lua.ProcessOf.
func ExampleModule() {
	greet := lua.Module{
		Name: "greet",
		Doc:  "Greetings from Go.",
		Funcs: []lua.Func{{
			Name: "hello",
			Fn: func(L *glua.LState) int {
				p := lua.ProcessOf(L)
				name := L.CheckString(1) // a wrong type raises
				if name == "" {
					return lua.ReturnError(L, errNoName) // nil, err
				}
				return lua.ReturnValue(L, "hello "+name+" from "+string(p.Entry().ID))
			},
			Doc:     "A greeting from the calling process's entry.",
			Params:  "name: string",
			Results: "string|nil, error?",
		}},
	}
	kinds := registry.NewRegistry()
	kinds.Register(lua.NewKind(lua.Options{Modules: []lua.Module{greet}}))
	reply, err := askService(kinds, svcConfig, `
local greet = require("greet")
return { main = function()
  local msg = process.inbox():receive()
  local none, err = greet.hello("")
  assert(none == nil and err.message == "a name is required")
  msg:reply(greet.hello(msg:payload()))
end }`, "world")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply)
	// Output: hello world from app:svc
}
