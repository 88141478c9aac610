package lua

import (
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/lua/internal/luatest"
)

const e2eConfig = `namespace: app
entries:
  - name: svc
    kind: process.lua
    source: file://svc.lua
    args: ["hi"]
    lifecycle: {auto_start: true}
  - name: main
    kind: process.lua
    source: file://main.lua
  - name: boom
    kind: process.lua
    source: file://boom.lua
  - name: spin
    kind: process.lua
    source: file://spin.lua
    lifecycle: {auto_start: true}
`

var e2eFiles = map[string]string{
	"config.yaml": e2eConfig,
	"svc.lua": `
return { main = function(greeting)
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    msg:reply(greeting .. " " .. tostring(msg:payload()))
  end
end }`,
	"main.lua": `
local json = require("json")
return { main = function(...)
  local args = {...}
  local v = assert(process.ask("app:svc", "greet", args[1]))
  print(v, json.encode(args))
  return "done"
end }`,
	"boom.lua": "return { main = function()\n  error(\"kaput\")\nend }\n",
	"spin.lua": `return { main = function() while true do end end }`,
}

func TestRunnerMain(t *testing.T) {
	dir := luatest.WriteFiles(t, e2eFiles)
	r := luatest.RunRunner(t, dir, "run", "--no-watch", "--main", "app:main", "config.yaml", "--", "world", "x")
	if r.Code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "hi world\t[\"world\",\"x\"]\n") {
		t.Fatalf("stdout = %q", r.Stdout)
	}
	// app:spin loops forever; shutdown must still stop it within its deadline.
	if r.Took > 30*time.Second {
		t.Fatalf("took %s to stop a runaway script", r.Took)
	}
}

func TestRunnerMainRaises(t *testing.T) {
	dir := luatest.WriteFiles(t, e2eFiles)
	r := luatest.RunRunner(t, dir, "run", "--no-watch", "--main", "app:boom", "config.yaml")
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "boom.lua:2: kaput") {
		t.Fatalf("stderr lacks the error with file:line:\n%s", r.Stderr)
	}
}

func TestRunnerValidateLuaErrors(t *testing.T) {
	files := map[string]string{
		"config.yaml": `namespace: app
entries:
  - name: bad
    kind: process.lua
    source: file://bad.lua
  - name: nomethod
    kind: process.lua
    source: file://ok.lua
    method: start
`,
		"bad.lua": "local x = \nreturn {}\n",
		"ok.lua":  "return { main = function() end }",
	}
	dir := luatest.WriteFiles(t, files)
	r := luatest.RunRunner(t, dir, "validate", "config.yaml")
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1", r.Code)
	}
	out := r.Stdout + r.Stderr
	for _, want := range []string{"app:bad: source: syntax error: bad.lua:2:", `app:nomethod: method: ok.lua defines no function "start"`} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
}
