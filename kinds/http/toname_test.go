package http_test

import (
	"strings"
	"testing"

	"github.com/proctor-run/proctor/cluster/clustertest"
	"github.com/proctor-run/proctor/internal/testutil"
	httpkind "github.com/proctor-run/proctor/kinds/http"
	"github.com/proctor-run/proctor/process"
)

// The example of docs/kinds/http.md's "A route to a registered name", as
// the page shows it.
const (
	toNameYAML = `  - name: greeter
    kind: process.lua
    source: file://greeter.lua
    lifecycle: {auto_start: true}

  - name: hello
    kind: http.route
    server: web
    method: GET
    path: /hello
    to_name: greeter.current   # a name greeter.lua registers
    lifecycle: {auto_start: true, depends_on: [greeter]}
`
	toNameLua = `-- Registers the name the route asks; whichever process holds
-- "greeter.current" when a request comes answers it.
return {
  init = function()
    assert(process.register("greeter.current"))
  end,
  main = function()
    local inbox = process.inbox()
    while true do
      local msg = inbox:receive()
      local name = msg:payload().query.name or "world"
      msg:reply({body = {hello = name}})
    end
  end,
}
`
)

// A route with to_name asks whoever holds the name when the request
// comes; when no process holds it the answer is 503 stopped, as for an
// entry that is not running. The page shows this example as it is run.
func TestToName(t *testing.T) {
	n := startExample(t, "to_name", "greeter.lua", toNameLua, toNameYAML)
	c := client()
	defer c.CloseIdleConnections()
	if status, h, body := get(t, c, "GET", n.url("/hello?name=Ann"), ""); status != 200 || body != `{"hello":"Ann"}`+"\n" || h.Get("Content-Type") != "application/json" {
		t.Errorf("to_name: %d %v %q", status, h, body)
	}
	if v := n.server("app:web").View().(httpkind.ServerView); len(v.Routes) != 1 || v.Routes[0].ToName != "greeter.current" || v.Routes[0].To != "" {
		t.Errorf("view: %+v", v.Routes)
	}
	node := n.rt.Env().Node
	pid, ok := node.Whereis("greeter.current")
	if !ok {
		t.Fatal("greeter.current is not registered")
	}
	if err := node.Terminate(pid); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the name released", func() bool { _, ok := node.Whereis("greeter.current"); return !ok })
	want := `{"error":{"kind":"stopped","message":"route app:hello: to_name greeter.current: no process registered under that name"}}` + "\n"
	if status, _, body := get(t, c, "GET", n.url("/hello"), ""); status != 503 || body != want {
		t.Errorf("no process holds the name: %d %s, want 503 %s", status, body, want)
	}
	// Another process takes the name: the route asks it from the next
	// request on.
	if _, err := node.Spawn(standby{}, process.SpawnOptions{Name: "greeter.current"}); err != nil {
		t.Fatal(err)
	}
	if status, _, body := get(t, c, "GET", n.url("/hello"), ""); status != 200 || body != "standby" {
		t.Errorf("the name taken over: %d %q", status, body)
	}
}

// standby answers every ask with "standby".
type standby struct{}

func (standby) Receive(c process.Context, m process.Message) { _, _ = c.Reply(&m, "standby", nil) }

// to_name: name@node asks the process registered under name on that
// node: 503 stopped while none holds it there (the node rejects the ask at
// once), its answer once one does, and 503 noconnection once the node has
// gone.
func TestToNameOnAnotherNode(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{}, "n1", "n2")
	c.Converged()
	n := startOn(t, t.TempDir(), `namespace: app
entries:
  - name: web
    kind: http.server
    listen: 127.0.0.1:0
    lifecycle: {auto_start: true}
  - name: remote
    kind: http.route
    server: web
    path: /remote
    to_name: greeter@n2
    timeout: 5s
    lifecycle: {auto_start: true}
`, c.Node("n1"))
	cl := client()
	defer cl.CloseIdleConnections()
	status, _, body := get(t, cl, "GET", n.url("/remote"), "")
	if status != 503 || !strings.Contains(body, `{"error":{"kind":"stopped","message":"\"greeter\" on node n2: no process registered under that name`) {
		t.Errorf("no process holds the name on n2: %d %s", status, body)
	}
	if _, err := c.Node("n2").Spawn(standby{}, process.SpawnOptions{Name: "greeter"}); err != nil {
		t.Fatal(err)
	}
	if status, _, body := get(t, cl, "GET", n.url("/remote"), ""); status != 200 || body != "standby" {
		t.Errorf("to_name greeter@n2: %d %q", status, body)
	}
	c.Stop("n2")
	testutil.Eventually(t, "n2 gone: 503 noconnection", func() bool {
		status, _, body := get(t, cl, "GET", n.url("/remote"), "")
		return status == 503 && strings.Contains(body, `"kind":"noconnection"`)
	})
}

// A Go handler that panics with the request in hand is the same 500 as a
// Lua script's error (reached here by to_name).
func TestPanickingHandlerIs500(t *testing.T) {
	n := start(t, base+`  - name: panics
    kind: http.route
    server: web
    method: GET
    path: /panics
    to_name: panicker
    lifecycle: {auto_start: true}
`)
	if _, err := n.rt.Env().Node.Spawn(panicker{}, process.SpawnOptions{Name: "panicker"}); err != nil {
		t.Fatal(err)
	}
	c := client()
	defer c.CloseIdleConnections()
	status, _, body := get(t, c, "GET", n.url("/panics"), "")
	if want := `{"error":{"kind":"internal","message":"the handler failed before it replied"}}` + "\n"; status != 500 || body != want {
		t.Errorf("a panic: %d %s, want 500 %s", status, body, want)
	}
}

// panicker panics on every message.
type panicker struct{}

func (panicker) Receive(process.Context, process.Message) { panic("secret 12345") }
