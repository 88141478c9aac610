package node_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/proctor-run/proctor/node"
	"github.com/proctor-run/proctor/process"
)

// greeter is a Lua service that answers every ask with a greeting.
const greeter = `return { main = function()
  local inbox = process.inbox()
  while true do
    local msg = inbox:receive()
    msg:reply(%q .. " " .. msg:payload())
  end
end }`

// A Go program that embeds a node: it starts one from a configuration's
// files, asks one of its Lua processes, edits the script and reloads, and
// stops the node.
func Example() {
	dir, err := os.MkdirTemp("", "embed")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	write("app.yaml", `namespace: app
entries:
  - name: svc
    kind: process.lua
    source: file://svc.lua
    lifecycle: {auto_start: true}
`)
	write("svc.lua", fmt.Sprintf(greeter, "hello"))

	ctx := context.Background()
	n, err := node.Start(ctx, node.Options{
		Paths:   []string{dir},
		Name:    "embed",
		Logger:  slog.New(slog.DiscardHandler),
		NoWatch: true, // this program says when to reload
	})
	if err != nil {
		log.Fatal(err)
	}
	defer n.Stop(ctx)

	ask := func(payload string) any {
		pid, err := n.Process().Resolve("app:svc") // an auto_start entry is registered under its ID
		if err != nil {
			log.Fatal(err)
		}
		reply, _, err := n.Process().Ask(pid, process.Message{Topic: "greet", Payload: payload}, time.Second)
		if err != nil {
			log.Fatal(err)
		}
		return reply
	}
	fmt.Println(ask("world"))

	write("svc.lua", fmt.Sprintf(greeter, "bonjour"))
	sum, err := n.Reload(ctx) // as a save of a watched file, or the runner's SIGHUP
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reload:", sum)
	fmt.Println(ask("monde"))
	// Output:
	// hello world
	// reload: added=0 updated=1 removed=0 unchanged=0 restarted=1
	// bonjour monde
}
