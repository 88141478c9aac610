package stubs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"

	"github.com/proctor-run/proctor/lua"
	luapg "github.com/proctor-run/proctor/lua/modules/pg"
	luarouter "github.com/proctor-run/proctor/lua/modules/router"
	luasupervisor "github.com/proctor-run/proctor/lua/modules/supervisor"
)

// surface is what cmd/runner's host shows scripts.
func surface() lua.Surface {
	return lua.NewKind(lua.Options{Modules: []lua.Module{luapg.Module(), luarouter.Module(), luasupervisor.Module()}}).Surface()
}

// stubbed parses the stubs (each must be valid Lua) and returns what they
// define: "process.send", "pg.open", "pg.scope:join", "errors.NOT_FOUND",
// "print", "_VERSION".
func stubbed(t *testing.T, files map[string][]byte) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for name, src := range files {
		chunk, err := parse.Parse(bytes.NewReader(src), name)
		if err != nil {
			t.Fatalf("%s does not parse as Lua: %v\n%s", name, err, src)
		}
		if !bytes.HasPrefix(src, []byte("---@meta")) {
			t.Errorf("%s does not start with ---@meta", name)
		}
		// Local tables stand for modules and classes: "local pg = {}"
		// is pg, "local pg_scope = {}" after "---@class pg.scope" is
		// pg.scope.
		alias := map[string]string{}
		classes := regexp.MustCompile(`(?m)^---@class (\S+)\nlocal (\w+) = \{\}`).FindAllSubmatch(src, -1)
		for _, m := range classes {
			alias[string(m[2])] = string(m[1])
		}
		if mod := strings.TrimSuffix(name, ".lua"); bytes.Contains(src, []byte("local "+mod+" = {}")) {
			alias[mod] = mod
		}
		table := func(e ast.Expr) string {
			id, ok := e.(*ast.IdentExpr)
			if !ok {
				t.Fatalf("%s: a definition on %T", name, e)
			}
			if a, ok := alias[id.Value]; ok {
				return a
			}
			return id.Value
		}
		for _, st := range chunk {
			switch s := st.(type) {
			case *ast.FuncDefStmt:
				switch {
				case s.Name.Receiver != nil:
					out[table(s.Name.Receiver)+":"+s.Name.Method] = true
				case s.Name.Func != nil:
					if a, ok := s.Name.Func.(*ast.AttrGetExpr); ok {
						out[table(a.Object)+"."+a.Key.(*ast.StringExpr).Value] = true
					} else {
						out[s.Name.Func.(*ast.IdentExpr).Value] = true
					}
				}
			case *ast.AssignStmt:
				for _, l := range s.Lhs {
					switch lhs := l.(type) {
					case *ast.AttrGetExpr:
						out[table(lhs.Object)+"."+lhs.Key.(*ast.StringExpr).Value] = true
					case *ast.IdentExpr:
						out[lhs.Value] = true
					}
				}
			}
		}
	}
	return out
}

// TestStubsMatchTheHost checks both directions: every name the host
// exposes to scripts has a stub, and every stub names something the host
// has. The stubs compile as Lua.
func TestStubsMatchTheHost(t *testing.T) {
	s := surface()
	files, err := Files(s)
	if err != nil {
		t.Fatal(err)
	}
	got := stubbed(t, files)
	want := map[string]bool{}
	for _, name := range s.Base {
		want[name] = true
	}
	for _, lib := range append(slices.Clone(s.Globals), s.Modules...) {
		for _, name := range s.Members[lib.Name] {
			want[lib.Name+"."+name] = true
		}
		if len(s.Members[lib.Name]) == 0 {
			t.Errorf("%s: the host's table holds nothing", lib.Name)
		}
		for _, typ := range lib.Types {
			for _, f := range typ.Funcs() {
				if !strings.HasPrefix(f.Name, "__") {
					want[typ.Name()+":"+f.Name] = true
				}
			}
		}
	}
	// The globals themselves (process = {}) are stubs too.
	for _, lib := range s.Globals {
		want[lib.Name] = true
	}
	for name := range want {
		if !got[name] {
			t.Errorf("the host has %s; no stub defines it", name)
		}
	}
	for name := range got {
		if !want[name] {
			t.Errorf("a stub defines %s, which the host does not have", name)
		}
	}
	for _, must := range []string{"process.send", "pg.open", "pg.scope:join", "channel:receive", "message:reply", "print", "require"} {
		if !got[must] {
			t.Errorf("no stub for %s", must)
		}
	}
	if files["os.lua"] != nil || got["load"] || got["dofile"] {
		t.Error("stubs for what the sandbox removes")
	}
}

// TestStubsDescribeEveryFunction: each function of a stub has its
// one-line description and its parameter and return annotations, and
// every type they name is one LuaLS knows or the stubs declare.
func TestStubsDescribeEveryFunction(t *testing.T) {
	files, err := Files(surface())
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, src := range files {
		for _, m := range regexp.MustCompile(`(?m)^---@(?:class|alias) (\S+)`).FindAllSubmatch(src, -1) {
			declared[string(m[1])] = true
		}
	}
	for _, must := range []string{"pid", "duration", "message", "error", "channel", "pg.scope", "pg.subscription", "supervisor.child_spec", "supervisor.child", "supervisor.counts"} {
		if !declared[must] {
			t.Errorf("no type %s", must)
		}
	}
	builtin := map[string]bool{"any": true, "nil": true, "boolean": true, "true": true, "false": true, "number": true,
		"integer": true, "string": true, "table": true, "function": true, "thread": true, "userdata": true, "fun": true}
	word := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_.]*`)
	quoted := regexp.MustCompile(`"[^"]*"`)
	retName := regexp.MustCompile(`([\w\]\)?]) (\w+|\.\.\.)$`) // "boolean ok", "any ..."
	paramName := regexp.MustCompile(`\w+\??:`)                 // fun(t: V[]): the names in a fun type
	funcLine := regexp.MustCompile(`^function (\S+)\((.*)\) end$`)
	for name, src := range files {
		lines := strings.Split(string(src), "\n")
		for i, line := range lines {
			m := funcLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			// The comment block above it: description first, then one
			// @param per parameter.
			j := i
			for j > 0 && strings.HasPrefix(lines[j-1], "---") {
				j--
			}
			block := lines[j:i]
			if len(block) == 0 || strings.HasPrefix(block[0], "---@") {
				t.Errorf("%s: %s has no description", name, m[1])
			}
			var params []string
			for _, l := range block {
				if p, ok := strings.CutPrefix(l, "---@param "); ok {
					params = append(params, strings.TrimSuffix(strings.Fields(p)[0], "?"))
				}
				if rest, ok := strings.CutPrefix(l, "---@param "); ok {
					l = "---@return " + strings.Join(strings.Fields(rest)[1:], " ")
				}
				if typ, ok := strings.CutPrefix(l, "---@return "); ok {
					typ = quoted.ReplaceAllString(typ, "")
					typ = retName.ReplaceAllString(typ, "$1")
					typ = paramName.ReplaceAllString(typ, "")
					for _, w := range word.FindAllString(typ, -1) {
						if !builtin[w] && !declared[w] && !isGeneric(block, w) {
							t.Errorf("%s: %s: unknown type %q in %q", name, m[1], w, l)
						}
					}
				}
			}
			args := strings.Split(m[2], ", ")
			if m[2] == "" {
				args = nil
			}
			if !slices.Equal(params, args) {
				t.Errorf("%s: %s: @param %v, arguments %v", name, m[1], params, args)
			}
		}
	}
}

// isGeneric reports whether w is a ---@generic name of a comment block.
func isGeneric(block []string, w string) bool {
	for _, l := range block {
		if g, ok := strings.CutPrefix(l, "---@generic "); ok {
			for _, n := range strings.Split(g, ",") {
				if strings.TrimSpace(n) == w {
					return true
				}
			}
		}
	}
	return false
}

// The sandbox's base functions are described exactly: none missing (a
// new one would be an error), none the sandbox lacks (load, dofile).
func TestSandboxStub(t *testing.T) {
	s := surface()
	if _, err := sandboxStub(s); err != nil {
		t.Fatal(err)
	}
	s.Base = append(s.Base, "loadstring")
	if _, err := sandboxStub(s); err == nil || !strings.Contains(err.Error(), "loadstring") {
		t.Fatalf("a base function without a description: %v", err)
	}
	for _, name := range baseNames() {
		if slices.Contains(surface().Removed, name) {
			t.Errorf("sandbox.lua describes %s, which the sandbox removes", name)
		}
	}
}

func TestWriteAndLuarc(t *testing.T) {
	dir := t.TempDir()
	s := surface()
	luarc := filepath.Join(dir, ".luarc.json")
	if err := Write(filepath.Join(dir, ".luals", "proctor"), luarc, s); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sandbox.lua", "process.lua", "channel.lua", "time.lua", "log.lua", "json.lua", "pg.lua", "router.lua", "supervisor.lua"} {
		if _, err := os.Stat(filepath.Join(dir, ".luals", "proctor", f)); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(luarc)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Runtime struct {
			Version string            `json:"version"`
			Builtin map[string]string `json:"builtin"`
		} `json:"runtime"`
		Diagnostics struct {
			Globals []string `json:"globals"`
		} `json:"diagnostics"`
		Workspace struct {
			Library []string `json:"library"`
		} `json:"workspace"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Runtime.Version != "Lua 5.1" || !slices.Equal(cfg.Diagnostics.Globals, []string{"channel", "log", "process", "time"}) ||
		!slices.Equal(cfg.Workspace.Library, []string{".luals/proctor"}) {
		t.Fatalf(".luarc.json: %s", b)
	}
	for lib, want := range map[string]string{"basic": "disable", "os": "disable", "io": "disable", "debug": "disable", "package": "disable",
		"utf8": "disable", "string": "enable", "table": "enable", "math": "enable", "coroutine": "enable", "builtin": "enable"} {
		if cfg.Runtime.Builtin[lib] != want {
			t.Errorf("runtime.builtin.%s = %q, want %q", lib, cfg.Runtime.Builtin[lib], want)
		}
	}
}
