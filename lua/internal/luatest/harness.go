// Package luatest runs Lua scripts in the tests of the Lua host and of its
// modules: a node and an environment around a host the test makes (with the
// modules it wants), entries decoded from YAML fields, and processes
// spawned, awaited and torn down. It imports no kind, so the host's own
// tests run without any.
package luatest

import (
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
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// Main runs a test binary's tests, removes the runner binary the
// end-to-end tests built, and fails when goroutines are left behind.
func Main(m *testing.M) {
	code := m.Run()
	removeRunner()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Kind is what the harness needs of a host: it decodes entries and spawns
// their processes.
type Kind interface {
	registry.Kind
	registry.Template
}

// Harness runs the processes of one test.
type Harness struct {
	T    testing.TB
	Dir  string // where Write puts files and entries' sources live
	Node *process.Node
	Env  *registry.Env
	Kind Kind
	Out  *testutil.SyncBuffer // what scripts print
	Logs *testutil.SyncBuffer // the entries' log, at debug level
	Look *Lookup              // Env.Entries: the entries Entry decoded
	Dead *Letters             // the node's dead letters

	mu   sync.Mutex
	pids []process.PID
	// exits holds each spawned process's exit watch, taken at spawn, so a
	// test can wait for a process that may exit before it asks.
	exits map[process.PID]exitWatch
}

type exitWatch struct {
	done <-chan struct{}
	exit func() process.Exit
}

// New returns a harness around the host newKind makes; newKind is given the
// writer scripts print to. Every process the harness spawned is stopped
// when the test ends.
func New(t testing.TB, newKind func(stdout io.Writer) Kind) *Harness {
	return NewOnNode(t, process.Options{}, newKind)
}

// NewOnNode is New with the node's options (its limits); the name, logger
// and dead letters are the harness's own.
func NewOnNode(t testing.TB, opts process.Options, newKind func(stdout io.Writer) Kind) *Harness {
	h := &Harness{T: t, Dir: t.TempDir(), Out: &testutil.SyncBuffer{}, Logs: &testutil.SyncBuffer{}, Dead: &Letters{}}
	opts.Name, opts.Logger, opts.DeadLetters = "test", slog.New(slog.DiscardHandler), h.Dead
	h.Node = process.NewNode(opts)
	h.Look = &Lookup{h: h, entries: map[registry.ID]*registry.Entry{}}
	h.Env = &registry.Env{
		Node:    h.Node,
		Logger:  slog.New(slog.NewTextHandler(h.Logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Entries: h.Look,
	}
	h.Kind = newKind(h.Out)
	t.Cleanup(h.stopAll)
	return h
}

// Letters keeps the harness node's dead letters.
type Letters struct {
	mu  sync.Mutex
	got []process.DeadLetter
}

// DeadLetter implements process.DeadLetterSink.
func (l *Letters) DeadLetter(d process.DeadLetter) {
	l.mu.Lock()
	l.got = append(l.got, d)
	l.mu.Unlock()
}

// ByReason returns the dead letters so far, by reason, in order.
func (l *Letters) ByReason() map[process.DeadLetterReason][]process.DeadLetter {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[process.DeadLetterReason][]process.DeadLetter{}
	for _, d := range l.got {
		out[d.Reason] = append(out[d.Reason], d)
	}
	return out
}

// Lookup resolves the entries the harness decoded and spawns them with the
// host, as the registry would; SetInstance adds running instances (a pg
// scope) for the kinds' Find.
type Lookup struct {
	h         *Harness
	mu        sync.Mutex
	entries   map[registry.ID]*registry.Entry
	instances map[registry.ID]registry.Instance
}

// Entry implements registry.Lookup.
func (l *Lookup) Entry(id registry.ID) (*registry.Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[id]
	return e, ok
}

// Instance implements registry.Lookup.
func (l *Lookup) Instance(id registry.ID) (registry.Instance, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	inst, ok := l.instances[id]
	return inst, ok
}

// SetInstance makes inst the running instance of id.
func (l *Lookup) SetInstance(id registry.ID, inst registry.Instance) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.instances == nil {
		l.instances = map[registry.ID]registry.Instance{}
	}
	l.instances[id] = inst
}

// Spawn implements registry.Lookup.
func (l *Lookup) Spawn(id registry.ID, opts registry.SpawnOptions) (process.PID, error) {
	e, ok := l.Entry(id)
	if !ok {
		return process.PID{}, fmt.Errorf("spawn %s: %w", id, process.ErrNoProcess)
	}
	pid, err := l.h.Kind.Spawn(l.h.Env, e, opts)
	if err == nil {
		l.h.Track(pid)
	}
	return pid, err
}

// stopAll terminates every process the harness spawned and waits until
// the node has none, so goleak sees no goroutine of ours.
func (h *Harness) stopAll() {
	h.mu.Lock()
	pids := append([]process.PID(nil), h.pids...)
	h.mu.Unlock()
	for _, pid := range pids {
		_ = h.Node.Terminate(pid)
	}
	testutil.EventuallyWithin(h.T, 5*time.Second, "every process of the test to exit", func() bool { return h.Node.Count() == 0 })
}

// Track has pid terminated when the test ends.
func (h *Harness) Track(pid process.PID) {
	h.mu.Lock()
	h.pids = append(h.pids, pid)
	h.mu.Unlock()
}

// Write puts a file in the harness directory.
func (h *Harness) Write(name, content string) {
	h.T.Helper()
	p := filepath.Join(h.Dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.T.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.T.Fatal(err)
	}
}

// Decode decodes an entry "test:<name>" of the host's kind whose YAML
// fields are given, and returns it with the validation errors.
func (h *Harness) Decode(name, fields string) (*registry.Entry, []error) {
	h.T.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(fields), &doc); err != nil {
		h.T.Fatalf("yaml: %v", err)
	}
	node := doc.Content[0]
	e := &registry.Entry{ID: registry.ID("test:" + name), Kind: h.Kind.Name()}
	var errs []error
	d := registry.NewDecoder(e, filepath.Join(h.Dir, "config.yaml"), node, &errs, nil)
	e.Spec = h.Kind.Decode(d)
	d.Finish()
	return e, errs
}

// Entry decodes a valid entry with script src (written as <name>.lua) and
// extra YAML fields, and makes it known to process.spawn.
func (h *Harness) Entry(name, src string, extra ...string) *registry.Entry {
	h.T.Helper()
	h.Write(name+".lua", src)
	fields := "source: file://" + name + ".lua\n" + strings.Join(extra, "\n")
	e, errs := h.Decode(name, fields)
	if len(errs) > 0 {
		h.T.Fatalf("decode %s: %v", name, errs)
	}
	h.Look.mu.Lock()
	h.Look.entries[e.ID] = e
	h.Look.mu.Unlock()
	return e
}

// Known returns the entry Entry made with ID id.
func (h *Harness) Known(id registry.ID) *registry.Entry {
	h.T.Helper()
	e, ok := h.Look.Entry(id)
	if !ok {
		h.T.Fatalf("no entry %s", id)
	}
	return e
}

// Spawn spawns a process of e with args (the entry's own when none).
func (h *Harness) Spawn(e *registry.Entry, args ...any) process.PID {
	h.T.Helper()
	var a []any
	if len(args) > 0 {
		a = args
	}
	pid, err := h.Kind.Spawn(h.Env, e, registry.SpawnOptions{Args: a})
	if err != nil {
		h.T.Fatalf("spawn: %v", err)
	}
	h.Track(pid)
	if done, exit, ok := h.Node.Done(pid); ok {
		h.mu.Lock()
		if h.exits == nil {
			h.exits = map[process.PID]exitWatch{}
		}
		h.exits[pid] = exitWatch{done, exit}
		h.mu.Unlock()
	}
	return pid
}

// Wait waits for pid to exit and returns its exit.
func (h *Harness) Wait(pid process.PID, d time.Duration) process.Exit {
	h.T.Helper()
	h.mu.Lock()
	w, ok := h.exits[pid]
	h.mu.Unlock()
	if !ok {
		w.done, w.exit, ok = h.Node.Done(pid)
	}
	if !ok {
		h.T.Fatalf("process %s is already gone", pid)
	}
	select {
	case <-w.done:
		return w.exit()
	case <-time.After(d):
		h.T.Fatalf("process %s did not exit within %s", pid, d)
	}
	return process.Exit{}
}

// RunDeadline bounds one script's run. It is a ceiling for a hung script,
// not an expected time: the memory-bomb scripts build 64 MiB strings, which
// takes seconds under -race on a loaded 2-core machine.
const RunDeadline = 60 * time.Second

// Run spawns e and waits for its exit. A start that fails (the script
// raised while loading, or in its init) is returned as the exit's error:
// the process ran and ended with it, the spawner just heard it first.
func (h *Harness) Run(e *registry.Entry, args ...any) process.Exit {
	h.T.Helper()
	done := make(chan process.Exit, 1)
	// Watch from a Go process so a fast exit is not missed.
	watcher, err := h.Node.SpawnFunc(func(p *process.Proc) (any, error) {
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
		h.T.Fatal(err)
	}
	var a []any
	if len(args) > 0 {
		a = args
	}
	pid, err := h.Kind.Spawn(h.Env, e, registry.SpawnOptions{Args: a, SpawnOptions: process.SpawnOptions{MonitorBy: watcher}})
	h.Track(watcher)
	if err != nil {
		_ = h.Node.Terminate(watcher)
		return process.Exit{Err: err}
	}
	h.Track(pid)
	select {
	case ex := <-done:
		return ex
	case <-time.After(RunDeadline):
		_ = h.Node.Terminate(pid)
		_ = h.Node.Terminate(watcher)
		h.T.Fatalf("process %s did not exit within %s", pid, RunDeadline)
	}
	return process.Exit{}
}

// Check runs e and fails the test unless the script returns "ok".
func (h *Harness) Check(e *registry.Entry, args ...any) {
	h.T.Helper()
	ex := h.Run(e, args...)
	if ex.Err != nil {
		h.T.Fatalf("script failed: %v", ex.Err)
	}
	if ex.Value != "ok" {
		h.T.Fatalf("script returned %#v, want \"ok\"", ex.Value)
	}
}

// ExpectExit runs src as the entry name and checks how it exits: returning
// "ok" when want is empty, else raising an error that contains want.
func (h *Harness) ExpectExit(name, src, want string) {
	h.T.Helper()
	ex := h.Run(h.Entry(name, src))
	if want == "" {
		if ex.Err != nil || ex.Value != "ok" {
			h.T.Fatalf("exit = %#v, %v", ex.Value, ex.Err)
		}
		return
	}
	if ex.Err == nil || !strings.Contains(ex.Err.Error(), want) {
		h.T.Fatalf("exit = %v, want an error with %q", ex.Err, want)
	}
}
