package lua

import (
	"fmt"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

func nop(*lua.LState) int { return 0 }

// alphaModule is given to one host of TestHostsOwnTheirModules only.
var alphaModule = Module{
	Name:  "alpha",
	Doc:   "Test only: a module one host has and another has not.",
	Funcs: []Func{{Name: "name", Fn: func(L *lua.LState) int { L.Push(lua.LString("alpha")); return 1 }, Doc: "Its name.", Results: "string"}},
}

// Two hosts in one program load what each was given: a module is the
// host's, not the package's.
func TestHostsOwnTheirModules(t *testing.T) {
	with := newHarnessWith(t, Options{Modules: []Module{alphaModule}})
	without := newHarness(t)
	with.Check(with.Entry("main", `
return { main = function()
  assert(require("alpha").name() == "alpha")
  return "ok"
end }`))
	without.Write("util.lua", "return {}")
	without.Check(without.Entry("main", `
return { main = function()
  local ok, err = pcall(require, "alpha")
  assert(not ok and err:find('require "alpha": no such module (available: benchprobe, errors, exithook_test, json, stateprobe, testblock, util)', 1, true), err)
  return "ok"
end }`, "modules:\n  util: file://util.lua"))
	// An entry may name its own module like a runtime module of another
	// host, never like one of its own host's.
	without.Write("alpha.lua", "return {}")
	if _, errs := without.Decode("own", "source: file://main.lua\nmodules:\n  alpha: file://alpha.lua"); len(errs) != 0 {
		t.Fatalf("without alpha: %v", errs)
	}
	with.Write("alpha.lua", "return {}")
	_, errs := with.Decode("own", "source: file://main.lua\nmodules:\n  alpha: file://alpha.lua")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `module "alpha" is a runtime module`) {
		t.Fatalf("with alpha: %v", errs)
	}
	if got := fmt.Sprint(with.Kind.(*Host).ModuleNames()); got != "[alpha benchprobe errors exithook_test json stateprobe testblock]" {
		t.Fatalf("ModuleNames = %s", got)
	}
}

// A module the host cannot load is the embedder's mistake, reported when
// the host is made, with what is wrong.
func TestNewKindRejectsBadModules(t *testing.T) {
	ok := Func{Name: "f", Fn: nop, Doc: "Does nothing."}
	for _, tc := range []struct {
		name string
		mods []Module
		want string
	}{
		{"builtin name", []Module{{Name: "json", Doc: "x", Funcs: []Func{ok}}}, `module "json" given twice`},
		{"twice", []Module{{Name: "m", Doc: "x"}, {Name: "m", Doc: "x"}}, `module "m" given twice`},
		{"bad name", []Module{{Name: "no-dash", Doc: "x"}}, `invalid module name "no-dash"`},
		{"no doc", []Module{{Name: "m"}}, "module m: its description (Doc) must be one line"},
		{"unnamed func", []Module{{Name: "m", Doc: "x", Funcs: []Func{{Fn: nop, Doc: "x"}}}}, "a function has no name"},
		{"nil func", []Module{{Name: "m", Doc: "x", Funcs: []Func{{Name: "f", Doc: "x"}}}}, "f: no Go function"},
		{"func twice", []Module{{Name: "m", Doc: "x", Funcs: []Func{ok, ok}}}, "f: declared twice"},
		{"func doc", []Module{{Name: "m", Doc: "x", Funcs: []Func{{Name: "f", Fn: nop}}}}, "f: its description (Doc) must be one line"},
		{"bad param", []Module{{Name: "m", Doc: "x", Funcs: []Func{{Name: "f", Fn: nop, Doc: "x", Params: "string"}}}}, `f: parameter "string" is not "name: type"`},
		{"empty result", []Module{{Name: "m", Doc: "x", Funcs: []Func{{Name: "f", Fn: nop, Doc: "x", Results: "string,"}}}}, `f: an empty result in "string,"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Fatalf("panic = %v, want one with %q", r, tc.want)
				}
			}()
			NewKind(Options{Modules: tc.mods})
		})
	}
}

// Every function a script can reach on the host's own globals, modules and
// types is declared with a description and a well-formed signature: what
// documentation and editor stubs are made from.
func TestDeclarationsAreComplete(t *testing.T) {
	mods := append(globalModules(), NewKind(Options{}).Modules()...)
	var funcs int
	for _, m := range mods {
		if err := m.Check(); err != nil {
			t.Error(err)
		}
		funcs += len(m.Funcs)
		for _, typ := range m.Types {
			if err := checkFuncs(typ.Funcs()); err != nil {
				t.Errorf("type %s: %v", typ.Name(), err)
			}
			funcs += len(typ.Funcs())
		}
	}
	// process 19 (spawner 4, message 5), channel 2 + 5 + 1, time 3, log 4,
	// json 2, errors 5 (error 6).
	if funcs != 56 {
		t.Fatalf("%d functions declared", funcs)
	}
}

// Signature splits the parameters and results as LuaLS stubs need them.
func TestFuncSignature(t *testing.T) {
	f := Func{Params: "dest: string, opts?: table<string, any>, ...: any", Results: "fun(x: integer): string|nil, error?"}
	params, results, err := f.Signature()
	if err != nil {
		t.Fatal(err)
	}
	want := []Param{{"dest", "string", false}, {"opts", "table<string, any>", true}, {"...", "any", false}}
	if fmt.Sprint(params) != fmt.Sprint(want) || fmt.Sprint(results) != "[fun(x: integer): string|nil error?]" {
		t.Fatalf("params %v, results %q", params, results)
	}
}
