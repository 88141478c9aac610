package lua

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gopkg.in/yaml.v3"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/kinds/pool"
	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if runnerBin != "" {
		_ = os.RemoveAll(filepath.Dir(runnerBin))
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// fakeLookup resolves entries the harness decoded and spawns them with the
// host, as the registry would.
type fakeLookup struct {
	h  *harness
	mu sync.Mutex
	m  map[registry.ID]*registry.Entry
}

func (f *fakeLookup) Entry(id registry.ID) (*registry.Entry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.m[id]
	return e, ok
}

func (f *fakeLookup) Instance(registry.ID) (registry.Instance, bool) { return nil, false }

func (f *fakeLookup) Spawn(id registry.ID, opts registry.SpawnOptions) (process.PID, error) {
	e, ok := f.Entry(id)
	if !ok {
		return process.PID{}, fmt.Errorf("spawn %s: %w", id, process.ErrNoProcess)
	}
	pid, err := f.h.host.Spawn(f.h.env, e, opts)
	if err == nil {
		f.h.track(pid)
	}
	return pid, err
}

type harness struct {
	t    testing.TB
	dir  string
	node *process.Node
	env  *registry.Env
	host *Host
	out  *syncBuffer
	logs *syncBuffer
	look *fakeLookup
	pids []process.PID // guarded by look.mu
	// exits holds each spawned process's exit watch, taken at spawn, so a
	// test can wait for a process that may exit before it asks.
	exits map[process.PID]exitWatch // guarded by look.mu
	dead  *letterBox                // the node's dead letters
}

type exitWatch struct {
	done <-chan struct{}
	exit func() process.Exit
}

func newHarness(t testing.TB) *harness { return newHarnessWith(t, Options{}) }

// newHarnessWith is newHarness with the kind's options (Stdout is the
// harness's own).
func newHarnessWith(t testing.TB, opts Options) *harness {
	h := &harness{t: t, dir: t.TempDir(), out: &syncBuffer{}, logs: &syncBuffer{}, dead: &letterBox{}}
	h.node = process.NewNode(process.Options{Name: "test", Logger: slog.New(slog.DiscardHandler), DeadLetters: h.dead})
	h.look = &fakeLookup{h: h, m: map[registry.ID]*registry.Entry{}}
	h.env = &registry.Env{
		Node:    h.node,
		Logger:  slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Entries: h.look,
	}
	opts.Stdout = h.out
	h.host = NewKind(opts)
	t.Cleanup(h.stopAll)
	return h
}

// stopAll terminates every process the harness spawned and waits until
// the node has none, so goleak sees no goroutine of ours.
func (h *harness) stopAll() {
	h.look.mu.Lock()
	pids := append([]process.PID(nil), h.pids...)
	h.look.mu.Unlock()
	for _, pid := range pids {
		_ = h.node.Terminate(pid)
	}
	eventually(h.t, 5*time.Second, "every process of the test to exit", func() bool { return h.node.Count() == 0 })
}

func (h *harness) track(pid process.PID) {
	h.look.mu.Lock()
	h.pids = append(h.pids, pid)
	h.look.mu.Unlock()
}

// write puts a file in the harness directory.
func (h *harness) write(name, content string) {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// decode decodes an entry "test:<name>" whose YAML fields are given, and
// returns it with the validation errors.
func (h *harness) decode(name, fields string) (*registry.Entry, []error) {
	h.t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(fields), &doc); err != nil {
		h.t.Fatalf("yaml: %v", err)
	}
	node := doc.Content[0]
	e := &registry.Entry{ID: registry.ID("test:" + name), Kind: KindName}
	var errs []error
	d := registry.NewDecoder(e, filepath.Join(h.dir, "config.yaml"), node, &errs)
	e.Spec = h.host.Decode(d)
	d.Finish()
	return e, errs
}

// entry decodes a valid entry with script src (written as <name>.lua) and
// extra YAML fields, and makes it known to process.spawn.
func (h *harness) entry(name, src string, extra ...string) *registry.Entry {
	h.t.Helper()
	h.write(name+".lua", src)
	fields := "source: file://" + name + ".lua\n" + strings.Join(extra, "\n")
	e, errs := h.decode(name, fields)
	if len(errs) > 0 {
		h.t.Fatalf("decode %s: %v", name, errs)
	}
	h.look.mu.Lock()
	h.look.m[e.ID] = e
	h.look.mu.Unlock()
	return e
}

func (h *harness) spawn(e *registry.Entry, args ...any) process.PID {
	h.t.Helper()
	var a []any
	if len(args) > 0 {
		a = args
	}
	pid, err := h.host.Spawn(h.env, e, registry.SpawnOptions{Args: a})
	if err != nil {
		h.t.Fatalf("spawn: %v", err)
	}
	h.track(pid)
	if done, exit, ok := h.node.Done(pid); ok {
		h.look.mu.Lock()
		if h.exits == nil {
			h.exits = map[process.PID]exitWatch{}
		}
		h.exits[pid] = exitWatch{done, exit}
		h.look.mu.Unlock()
	}
	return pid
}

// wait waits for pid to exit and returns its exit.
func (h *harness) wait(pid process.PID, d time.Duration) process.Exit {
	h.t.Helper()
	h.look.mu.Lock()
	w, ok := h.exits[pid]
	h.look.mu.Unlock()
	if !ok {
		w.done, w.exit, ok = h.node.Done(pid)
	}
	if !ok {
		h.t.Fatalf("process %s is already gone", pid)
	}
	done, exit := w.done, w.exit
	select {
	case <-done:
		return exit()
	case <-time.After(d):
		h.t.Fatalf("process %s did not exit within %s", pid, d)
	}
	return process.Exit{}
}

// run spawns e and waits for its exit.
// runDeadline bounds one script's run. It is a ceiling for a hung script,
// not an expected time: the memory-bomb scripts build 64 MiB strings, which
// takes seconds under -race on a loaded 2-core machine.
const runDeadline = 60 * time.Second

func (h *harness) run(e *registry.Entry, args ...any) process.Exit {
	h.t.Helper()
	done := make(chan process.Exit, 1)
	var pid process.PID
	// Watch from a Go process so a fast exit is not missed.
	watcher, err := h.node.SpawnFunc(func(p *process.Proc) (any, error) {
		for {
			if e, ok := p.TryEvent(); ok {
				done <- e.Exit
				return nil, nil
			}
			p.Arm()
			if e, ok := p.TryEvent(); ok {
				p.Disarm()
				done <- e.Exit
				return nil, nil
			}
			select {
			case <-p.Wake():
			case <-p.Context().Done():
				return nil, nil
			}
		}
	}, process.SpawnOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var a []any
	if len(args) > 0 {
		a = args
	}
	pid, err = h.host.Spawn(h.env, e, registry.SpawnOptions{Args: a, SpawnOptions: process.SpawnOptions{MonitorBy: watcher}})
	h.track(watcher)
	if err == nil {
		h.track(pid)
	}
	if err != nil {
		_ = h.node.Terminate(watcher)
		h.t.Fatalf("spawn: %v", err)
	}
	select {
	case ex := <-done:
		return ex
	case <-time.After(runDeadline):
		_ = h.node.Terminate(pid)
		_ = h.node.Terminate(watcher)
		h.t.Fatalf("process %s did not exit within %s", pid, runDeadline)
	}
	return process.Exit{}
}

// Shared helpers (internal/testutil).
type syncBuffer = testutil.SyncBuffer

var eventually = testutil.EventuallyWithin

// realRuntime writes files into a directory and runs the config with the
// real registry runtime, every kind and the root supervisor; stop tears it
// all down and checks that no process is left.
func realRuntime(t *testing.T, files map[string]string) (rt *registry.Runtime, node *process.Node, stop func()) {
	t.Helper()
	dir := writeFiles(t, files)
	kinds := registry.NewRegistry()
	kinds.Register(NewKind(Options{Stdout: io.Discard}))
	kinds.Register(pgscope.Kind{})
	kinds.Register(pool.Kind{})
	kinds.Register(pool.GroupKind{})
	for _, k := range supervisor.SupervisorKinds() {
		kinds.Register(k)
	}
	cfg, err := (&registry.Loader{Kinds: kinds}).Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	node = process.NewNode(process.Options{Name: "t", Logger: logger})
	rt = registry.NewRuntime(registry.RuntimeOptions{Node: node, Kinds: kinds, Logger: logger, StopTimeout: 5 * time.Second})
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
		eventually(t, 5*time.Second, "every process to exit", func() bool { return node.Count() == 0 })
	}
}

// runMain spawns app:main and returns its exit.
func runMain(t *testing.T, rt *registry.Runtime, node *process.Node, d time.Duration) process.Exit {
	t.Helper()
	pid, err := rt.Spawn("app:main", registry.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done, exit, ok := node.Done(pid)
	if !ok {
		t.Fatal("main exited at once")
	}
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal("main did not finish")
	}
	return exit()
}

// expectExit runs src as the entry name and checks how it exits: returning
// "ok" when want is empty, else raising an error that contains want.
func expectExit(t *testing.T, h *harness, name, src, want string) {
	t.Helper()
	ex := h.run(h.entry(name, src))
	if want == "" {
		if ex.Err != nil || ex.Value != "ok" {
			t.Fatalf("exit = %#v, %v", ex.Value, ex.Err)
		}
		return
	}
	if ex.Err == nil || !strings.Contains(ex.Err.Error(), want) {
		t.Fatalf("exit = %v, want an error with %q", ex.Err, want)
	}
}
