package lint

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/lua"
	luapg "github.com/proctor-run/proctor/lua/modules/pg"
	luarouter "github.com/proctor-run/proctor/lua/modules/router"
	luasupervisor "github.com/proctor-run/proctor/lua/modules/supervisor"
)

// surface is what cmd/runner's host shows scripts.
func surface() lua.Surface {
	return lua.NewKind(lua.Options{Modules: []lua.Module{luapg.Module(), luarouter.Module(), luasupervisor.Module()}}).Surface()
}

func check(t *testing.T, src string, modules ...string) []string {
	t.Helper()
	fs, err := Check("s.lua", []byte(src), Options{Surface: surface(), Modules: modules, Method: "main"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%d:%d: %s", f.Line, f.Col, f.Msg))
	}
	return out
}

func TestFindings(t *testing.T) {
	main := "\nreturn { main = main }"
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"misspelt global", "function main() procss.send('x', 't') end" + main,
			[]string{`1:17: unknown global "procss" (did you mean "process"?)`}},
		{"removed library", "function main()\n  os.exit(1)\nend" + main,
			[]string{"2:3: os is not available: the sandbox has no os, io, debug, package, load, loadstring, dofile, loadfile"}},
		{"removed function", "function main() return load('x') end" + main,
			[]string{"1:24: load is not available: the sandbox has no os, io, debug, package, load, loadstring, dofile, loadfile"}},
		{"misspelt function of a global", "function main()\n  process.sned('a', 'b')\nend" + main,
			[]string{"2:11: process.sned does not exist (did you mean process.send?)"}},
		{"misspelt module function", "local pg = require('pg')\nfunction main() return pg.opne('app:pg') end" + main,
			[]string{"2:27: pg.opne does not exist (did you mean pg.open?)"}},
		{"misspelt module function, other alias", "local groups = require(\"pg\")\nfunction main() return groups.opne('app:pg') end" + main,
			[]string{"2:31: pg.opne does not exist (did you mean pg.open?)"}},
		{"standard library", "function main() return string.dump(main), table.unpack({}) end" + main,
			[]string{`1:31: string.dump does not exist`, "1:49: table.unpack does not exist"}},
		{"unknown module", "local x = require('pgg')\nfunction main() end" + main,
			[]string{`1:19: require "pgg": no such module (did you mean "pg"?); available: errors, json, pg, router, supervisor, util`}},
		{"unknown module among entry modules", "local x = require('utl')\nfunction main() end" + main,
			[]string{`1:19: require "utl": no such module (did you mean "util"?); available: errors, json, pg, router, supervisor, util`}},
		{"no main", "return { start = function() end }",
			[]string{`1:1: defines no function "main" (return a table with it, or define a global function)`}},
		{"returns a literal", "local x = 1\n  return 42", []string{`2:3: returns a number, not a table with the function "main"`}},
		{"two on a line", "function main() return procss, procss end" + main,
			[]string{`1:24: unknown global "procss" (did you mean "process"?)`, `1:32: unknown global "procss" (did you mean "process"?)`}},
		{"a local's own initializer", "function main() local x = x end" + main, []string{`1:27: unknown global "x"`}},
		{"a local function expression's own name", "function main() local f = function() return f() end end" + main,
			[]string{"1:45: unknown global \"f\": in `local f = function` the function does not see f (write `local function f` to call it from its own body)"}},
		{"a local after its block", "function main() do local y = 1 end return y end" + main, []string{`1:43: unknown global "y"`}},
		{"for variable after its loop", "function main() for i = 1, 2 do end return i end" + main, []string{`1:44: unknown global "i"`}},
		{"a declaration and a key before the read", "function main() local procss = {procss = procss} end" + main,
			[]string{`1:42: unknown global "procss" (did you mean "process"?)`}},
		{"params before the read", "function main() local f = function(procss) end return procss end" + main,
			[]string{`1:55: unknown global "procss" (did you mean "process"?)`}},
		{"method on a library", "function main() return process:sned() end" + main,
			[]string{"1:32: process.sned does not exist (did you mean process.send?)"}},
		{"method typo on a handle", "local pg = require('pg')\nfunction main()\n  local bus = pg.open('app:bus')\n  bus:brodcast('g', 't')\nend" + main,
			[]string{"4:7: pg.scope:brodcast does not exist (did you mean pg.scope:broadcast?)"}},
		{"method typo on a handle with its error", "local pg = require('pg')\nfunction main()\n  local bus, err = pg.open('app:bus')\n  return bus:jion('g')\nend" + main,
			[]string{"4:14: pg.scope:jion does not exist (did you mean pg.scope:join?)"}},
		{"method typo on a call's result", "local pg = require('pg')\nfunction main() return pg.open('app:bus'):monitr('g') end" + main,
			[]string{"2:43: pg.scope:monitr does not exist (did you mean pg.scope:monitor?)"}},
		{"method typo on a handle's handle", "function main() local m = process.inbox():recieve() end" + main,
			[]string{"1:43: channel:recieve does not exist (did you mean channel:receive?)"}},
		{"bad duration literal", "function main()\n  time.sleep(\"1 sec\")\nend" + main,
			[]string{`2:14: time.sleep: argument #1: invalid duration "1 sec" (use a number of milliseconds or a string like "250ms")`}},
		{"bad ask timeout literal", "function main() return process.ask('x', 't', nil, '5 seconds') end" + main,
			[]string{`1:51: process.ask: argument #4: invalid duration "5 seconds" (use a number of milliseconds or a string like "250ms")`}},
		{"bad timeout literal through a module alias", "local r = require('router')\nfunction main() return r.ask('p', 't', '5 s') end" + main,
			[]string{`2:40: router.ask: argument #3: invalid duration "5 s" (use a number of milliseconds or a string like "250ms")`}},
		{"negative duration literal", "function main() return time.after('-1s') end" + main,
			[]string{`1:35: time.after: argument #1: duration must not be negative`}},
		{"too many arguments to a method", "function main()\n  local m = process.inbox():receive(2000)\nend" + main,
			[]string{"2:29: channel:receive takes no arguments, got 1"}},
		{"too many arguments to a function", "function main() time.sleep(10, 20) end" + main,
			[]string{"1:22: time.sleep takes at most 1 argument, got 2"}},
		{"a module used without require", "function main() return supervisor.which_children('app:core') end" + main,
			[]string{`1:24: unknown global "supervisor": supervisor is a module (local supervisor = require("supervisor"))`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := check(t, tt.src, "util")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// Scopes are followed: none of these is a finding.
func TestNoFalsePositives(t *testing.T) {
	for name, src := range map[string]string{
		"params and varargs": `return { main = function(a, b, ...) local n = select("#", ...) return a, b, n end }`,
		"for loops":          `return { main = function() for i = 1, 3 do print(i) end for k, v in pairs({}) do print(k, v) end end }`,
		"repeat sees its body": `return { main = function()
  repeat local done = true until done
end }`,
		"local function recursion": `local function fact(n) if n < 2 then return 1 end return n * fact(n - 1) end
return { main = function() return fact(5) end }`,
		"global defined below its use": `function main() return helper() end
function helper() return counter end
counter = 0`,
		"global assigned in a function": `function main() setup() return state end
function setup() state = {} end`,
		"methods and self": `local M = {}
function M:greet() return self.name end
function M.main() return M:greet() end
return M`,
		"a library the script extends": `string.split = function(s) return { s } end
function string.trim(s) return s end
return { main = function() return string.split("a"), string.trim("b") end }`,
		"a shadowed library": `return { main = function() local process = { sned = 1 } return process.sned end }`,
		"a reassigned alias": `local pg = require("pg")
pg = { opne = 1 }
return { main = function() return pg.opne end }`,
		"a reassigned global library": `log = { trace = print }
return { main = function() log.trace("x") end }`,
		"runtime modules and entry modules": `local json = require("json")
local router = require("router")
local sup = require("supervisor")
local util = require("util")
return { main = function() return json.encode(util.x), router.ask("p", 1), sup.route("s", "k"), util.anything end }`,
		"standard libraries": `return { main = function() return math.floor(math.huge), table.concat({}), coroutine.wrap(print), string.format("%d", 1), _VERSION end }`,
		"types' methods":     `return { main = function() local m = process.inbox():receive() return m:topic(), m:payload() end }`,
		"a computed require": `local name = "pg" local m = require(name) return { main = function() return m.whatever end }`,
		"main as a global":   "function main() end\nreturn 42",
		"fields of locals":   `local t = { os = 1 } return { main = function() return t.os, t.load end }`,
		"handles' methods": `local pg = require("pg")
return { main = function()
  local bus = pg.open("app:bus")
  local sub = bus:monitor("g")
  return bus:join("g"), sub:channel():receive(), sub:dropped()
end }`,
		"a reassigned handle": `local pg = require("pg")
return { main = function() local bus = pg.open("app:bus") bus = { anything = print } return bus:anything() end }`,
		"varargs and calls as the last argument": `local function two() return 1, 2 end
return { main = function(...) process.spawn("app:w", 1, 2, 3) time.sleep(two()) return process.send("x", "t", ...) end }`,
		"good durations": `return { main = function() time.sleep("250ms") time.sleep(10) time.sleep(1.5) return process.ask("x", "t", nil, "1m30s") end }`,
	} {
		t.Run(name, func(t *testing.T) {
			if got := check(t, src, "util"); len(got) > 0 {
				t.Fatalf("findings:\n%s", strings.Join(got, "\n"))
			}
		})
	}
}

var luaBlock = regexp.MustCompile("(?s)```lua\n(.*?)```")

// TestExamplesAreClean runs the lint over the demo's scripts, the docs'
// Lua examples and the scripts docs/kinds names: no findings.
func TestExamplesAreClean(t *testing.T) {
	root := filepath.Join("..", "..")
	scripts := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join(root, "demo", "*.lua"))
	kinds, _ := filepath.Glob(filepath.Join(root, "docs", "kinds", "*.lua"))
	for _, f := range append(files, kinds...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		scripts[f] = b
	}
	fragments := 0
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	more, _ := filepath.Glob(filepath.Join(root, "docs", "*", "*.md"))
	synopses := 0
	for _, p := range append(pages, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// A page's examples build on one another: an example that is
		// not a whole script sees the top-level locals of those before
		// it (local router = require("router")).
		locals := map[string]string{}
		for i, m := range luaBlock.FindAllSubmatch(b, -1) {
			name := fmt.Sprintf("%s#%d", p, i+1)
			a, err := analyze(name, m[1], surface(), locals)
			if err != nil {
				// A synopsis of signatures ("--> reply, err"), not code;
				// what it requires, the examples after it use.
				if !bytes.Contains(m[1], []byte("-->")) {
					t.Errorf("%s: %v", name, err)
				}
				for _, r := range requireLine.FindAllSubmatch(m[1], -1) {
					locals[string(r[1])] = string(r[2])
				}
				synopses++
				continue
			}
			if wholeScript.Match(m[1]) {
				scripts[name] = m[1]
			} else {
				fragments++
				fs, err := Check(name, m[1], Options{Surface: surface(), Locals: maps.Clone(locals)})
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fs {
					t.Errorf("%s", f)
				}
			}
			maps.Copy(locals, a.locals)
		}
	}
	if len(files) < 5 || len(kinds) < 2 || len(scripts) < 15 || fragments < 1 || synopses > 2 {
		t.Fatalf("found %d demo scripts, %d docs/kinds scripts, %d scripts in all, %d fragments, %d synopses",
			len(files), len(kinds), len(scripts), fragments, synopses)
	}
	t.Logf("%d whole scripts, %d fragments, %d synopses", len(scripts), fragments, synopses)
	for name, src := range scripts {
		fs, err := Check(name, src, Options{Surface: surface(), Method: "main"})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, f := range fs {
			t.Errorf("%s", f)
		}
	}
}

var requireLine = regexp.MustCompile(`(?m)^local (\w+) = require\("(\w+)"\)`)

// wholeScript matches an example that is a whole script: it returns its
// table, or defines main.
var wholeScript = regexp.MustCompile(`(?m)^(return [{\w]|function main\b)`)
