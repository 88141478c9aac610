package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	glua "github.com/yuin/gopher-lua"
	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/cluster"
	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/node"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/runtime"
)

const svcConfig = `namespace: app
entries:
  - name: svc
    kind: process.lua
    source: file://svc.lua
    lifecycle: {auto_start: true}
`

// configDir writes files into a temporary directory and returns it.
func configDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func ask(t *testing.T, n *node.Node, id, payload string) any {
	t.Helper()
	pid, err := n.Process().Resolve(id)
	if err != nil {
		t.Fatalf("resolve %s: %v", id, err)
	}
	reply, _, err := n.Process().Ask(pid, process.Message{Topic: "ask", Payload: payload}, 5*time.Second)
	if err != nil {
		t.Fatalf("ask %s: %v", id, err)
	}
	return reply
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// An embedder's whole round: start a node with the HTTP API and the file
// watcher, ask a process, reload a broken and then a fixed script, stop.
func TestEmbedderStartsAsksReloadsStops(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := configDir(t, map[string]string{"app.yaml": svcConfig, "svc.lua": fmt.Sprintf(greeter, "hello")})
	ctx := context.Background()
	n, err := node.Start(ctx, node.Options{Paths: []string{dir}, Name: "embed", Logger: quiet(), HTTP: "127.0.0.1:0", Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if got := ask(t, n, "app:svc", "world"); got != "hello world" {
		t.Fatalf("reply %v", got)
	}
	if n.Process().Name() != "embed" || n.Cluster() != nil || n.Root() == nil || n.Kinds() == nil {
		t.Fatalf("accessors: name %q cluster %v root %v", n.Process().Name(), n.Cluster(), n.Root())
	}
	addr := n.HTTPAddr()
	if addr == nil {
		t.Fatal("no HTTP address")
	}
	resp, err := http.Get("http://" + addr.String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}

	// A broken configuration is rejected, whole, with its positions;
	// what runs keeps running.
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(svcConfig+"  - {name: bad, kind: no.such.kind}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = n.Reload(ctx)
	var es config.Errors
	if !errors.As(err, &es) || !strings.Contains(err.Error(), "app.yaml:") {
		t.Fatalf("reload of a broken config: %v, want config.Errors naming app.yaml", err)
	}
	if got := ask(t, n, "app:svc", "world"); got != "hello world" {
		t.Fatalf("after the rejected reload: %v", got)
	}

	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(svcConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "svc.lua"), []byte(fmt.Sprintf(greeter, "bonjour")), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := n.Reload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(sum.Updated, "app:svc") {
		t.Fatalf("summary %v: app:svc not updated", sum)
	}
	if got := ask(t, n, "app:svc", "monde"); got != "bonjour monde" {
		t.Fatalf("after the reload: %v", got)
	}

	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := n.Reload(ctx); !errors.Is(err, runtime.ErrWatcherClosed) {
		t.Fatalf("Reload after Stop: %v, want ErrWatcherClosed", err)
	}
	if _, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
		t.Fatal("the HTTP API still listens after Stop")
	}
	if c := n.Process().Count(); c != 0 {
		t.Fatalf("%d processes live after Stop", c)
	}
}

// Start loads Paths itself unless the caller did (Config), with the
// caller's Loader and its kinds.
func TestStartWithALoadedConfig(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := configDir(t, map[string]string{"app.yaml": svcConfig, "svc.lua": fmt.Sprintf(greeter, "hi")})
	loader := &config.Loader{Kinds: node.DefaultKinds(io.Discard), Logger: quiet()}
	cfg, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.Start(context.Background(), node.Options{Paths: []string{dir}, Config: cfg, Loader: loader, Logger: quiet(), NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(context.Background())
	if n.Kinds() != loader.Kinds || n.Runtime().Config() != cfg {
		t.Fatal("the node does not run the caller's kinds and configuration")
	}
	if got := ask(t, n, "app:svc", "there"); got != "hi there" {
		t.Fatalf("reply %v", got)
	}
}

// A start that fails leaves nothing running: no goroutine, no listener,
// and the error says what failed.
func TestFailedStartStopsWhatStarted(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	good := configDir(t, map[string]string{"app.yaml": svcConfig, "svc.lua": fmt.Sprintf(greeter, "hi")})
	bad := configDir(t, map[string]string{"app.yaml": "namespace: app\nentries:\n  - {name: x, kind: no.such.kind}\n"})
	failing := configDir(t, map[string]string{"app.yaml": svcConfig, "svc.lua": "return {init = function() error('no start') end, main = function() end}"})
	for _, tc := range []struct {
		name string
		opts node.Options
		want string
	}{
		{"no paths", node.Options{}, "Options.Paths"},
		{"invalid config", node.Options{Paths: []string{bad}}, "app.yaml:3:"},
		{"HTTP address taken", node.Options{Paths: []string{good}, HTTP: taken.Addr().String(), Cluster: &cluster.Options{Bind: "127.0.0.1:0"}}, "address already in use"},
		{"an entry fails to start", node.Options{Paths: []string{failing}, HTTP: "127.0.0.1:0"}, "no start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), testutil.IgnoreMemberlistProbe)
			tc.opts.Logger, tc.opts.Stdout = quiet(), io.Discard
			n, err := node.Start(context.Background(), tc.opts)
			if err == nil || n != nil {
				if n != nil {
					n.Stop(context.Background())
				}
				t.Fatalf("Start: %v, %v; want an error", n, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

// A start whose context ends (the runner's SIGINT) is abandoned, whatever
// it was doing: here an entry whose init would block for an hour.
func TestCancelledStartIsAbandoned(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := configDir(t, map[string]string{
		"app.yaml": "namespace: app\nentries:\n  - {name: slow, kind: process.lua, source: file://slow.lua, lifecycle: {auto_start: true, start_timeout: 1h}}\n",
		"slow.lua": "return {init = function() print('in init'); time.sleep('1h') end, main = function() end}",
	})
	var logs testutil.SyncBuffer
	inInit := &firstWrite{c: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		n, err := node.Start(ctx, node.Options{Paths: []string{dir}, Logger: slog.New(slog.NewTextHandler(&logs, nil)), HTTP: "127.0.0.1:0", Stdout: inInit})
		if n != nil {
			n.Stop(context.Background())
		}
		done <- err
	}()
	select {
	case <-inInit.c:
	case <-time.After(testutil.Deadline):
		t.Fatalf("the entry's init did not run:\n%s", logs.String())
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Start: %v, want context.Canceled", err)
		}
	case <-time.After(testutil.Deadline):
		t.Fatalf("Start did not return once cancelled:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "msg=stopped") {
		t.Fatalf("the abandoned start did not stop the node:\n%s", logs.String())
	}
}

// firstWrite closes c on its first write (Lua's print).
type firstWrite struct {
	once sync.Once
	c    chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.c) })
	return len(p), nil
}

// Two nodes on 127.0.0.1 made by node.Start share their pg scopes: the
// kinds get the cluster's pg distribution through their start environment
// (nothing late-bound), and a graceful Stop is a leave the other sees.
func TestTwoNodesShareAPGScope(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), testutil.IgnoreMemberlistProbe)
	dir, err := filepath.Abs("testdata/pg")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := func(name string, join ...string) *node.Node {
		n, err := node.Start(ctx, node.Options{Paths: []string{dir}, Name: name, Logger: quiet(), Stdout: io.Discard, NoWatch: true,
			Cluster: &cluster.Options{Bind: "127.0.0.1:0", Join: join}})
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		return n
	}
	n1 := start("n1")
	defer n1.Stop(ctx)
	n2 := start("n2", n1.Cluster().Membership().Addr())
	defer n2.Stop(ctx)

	scope := func(n *node.Node) *pgscope.Scope {
		in, ok := n.Runtime().Instance("pgc:pg")
		if !ok {
			t.Fatal("no pgc:pg")
		}
		return in.(*pgscope.Scope)
	}
	nodesOf := func(n *node.Node) []string {
		var names []string
		for _, pid := range scope(n).GetMembers("g") {
			names = append(names, pid.Node)
		}
		slices.Sort(names)
		return names
	}
	for _, n := range []*node.Node{n1, n2} {
		testutil.Eventually(t, n.Process().Name()+" to see both members", func() bool {
			return slices.Equal(nodesOf(n), []string{"n1", "n2"})
		})
	}
	// n1 asks n2's member, as any member of the group may be asked.
	for _, pid := range scope(n1).GetMembers("g") {
		reply, _, err := n1.Process().Ask(pid, process.Message{Topic: "who"}, 5*time.Second)
		if err != nil || reply != pid.Node {
			t.Fatalf("ask %s: %v, %v", pid, reply, err)
		}
	}
	if err := n2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "n1 to drop n2's member once it left", func() bool {
		return slices.Equal(nodesOf(n1), []string{"n1"})
	})
	// A leave is seen at once; a failure would be StateDead, after the
	// failure detector's timeouts.
	testutil.Eventually(t, "n1 to see n2 leave", func() bool {
		for _, m := range n1.Cluster().Membership().Known() {
			if m.Name == "n2" {
				return m.State == cluster.StateLeft
			}
		}
		return false
	})
}

// A save of a watched file reloads on its own, and the program learns what
// it did from Runtime().LastReload(), as docs/lua/embedding.md says: an
// applied change, then a rejected one with its position, the old code
// still answering.
func TestWatchedSaveIsSeenInLastReload(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := configDir(t, map[string]string{"app.yaml": svcConfig, "svc.lua": fmt.Sprintf(greeter, "hello")})
	ctx := context.Background()
	n, err := node.Start(ctx, node.Options{Paths: []string{dir}, Name: "watched", Logger: quiet(), Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(ctx)
	if _, ok := n.Runtime().LastReload(); ok {
		t.Fatal("a reload before any save")
	}
	// next waits for the reload after the one seen last (by its time).
	var seen time.Time
	next := func() runtime.ReloadAttempt {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if a, ok := n.Runtime().LastReload(); ok && a.Time.After(seen) {
				seen = a.Time
				return a
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("no reload after a save within 30s")
		return runtime.ReloadAttempt{}
	}
	// Saved as editors do, by a rename: a save is one change, never a
	// half-written file (which a loaded machine could reload between a
	// truncation and the write).
	save := func(name, text string) {
		t.Helper()
		tmp := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	save("svc.lua", fmt.Sprintf(greeter, "bonjour"))
	if a := next(); a.Result != "applied" || a.Updated != 1 || len(a.Errors) != 0 {
		t.Fatalf("after a good save: %+v", a)
	}
	if got := ask(t, n, "app:svc", "monde"); got != "bonjour monde" {
		t.Fatalf("reply after the save: %v", got)
	}
	save("app.yaml", strings.Replace(svcConfig, "svc.lua", "nope.lua", 1))
	a := next()
	if a.Result != "rejected" || len(a.Errors) != 1 || !strings.Contains(a.Errors[0], "app.yaml:5:") || !strings.Contains(a.Errors[0], "app:svc: source") {
		t.Fatalf("after a bad save: %+v", a)
	}
	if got := ask(t, n, "app:svc", "encore"); got != "bonjour encore" {
		t.Fatalf("reply after a rejected save: %v", got)
	}
}

// A program's own Lua module goes beside the shipped ones through
// DefaultKinds, and its own kinds into the registry it returns: a script
// requires both, with no copy of DefaultKinds.
func TestDefaultKindsWithAModuleOfYourOwn(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	greet := lua.Module{Name: "greet", Doc: "Greetings from Go.", Funcs: []lua.Func{{
		Name:    "hello",
		Fn:      func(L *glua.LState) int { return lua.ReturnValue(L, "hello "+L.CheckString(1)) },
		Doc:     "A greeting.",
		Params:  "name: string",
		Results: "string",
	}}}
	kinds := node.DefaultKinds(io.Discard, greet)
	dir := configDir(t, map[string]string{"app.yaml": svcConfig, "svc.lua": `
local greet, pg = require("greet"), require("pg")
return { main = function()
  local msg = process.inbox():receive()
  msg:reply(greet.hello(msg:payload()) .. " " .. type(pg.open))
end }`})
	ctx := context.Background()
	n, err := node.Start(ctx, node.Options{Paths: []string{dir}, Name: "own", Logger: quiet(), NoWatch: true,
		Loader: &config.Loader{Kinds: kinds, Logger: quiet()}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(ctx)
	if got := ask(t, n, "app:svc", "go"); got != "hello go function" {
		t.Fatalf("reply %v", got)
	}
	if n.Kinds() != kinds {
		t.Fatal("Kinds() is not the registry the Loader was given")
	}
}
