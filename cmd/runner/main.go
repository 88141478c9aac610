// Command runner runs, validates and reports on Proctor configurations.
// It only parses flags, loads the configuration, hands signals to a node
// that package node assembles and turns outcomes into exit codes; see
// docs/cli.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	goruntime "runtime"
	"runtime/debug"
	"syscall"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/lua/lint"
	"github.com/proctor-run/proctor/node"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
	"github.com/proctor-run/proctor/value"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `usage:
  runner run [flags] [PATH...] [-- ARGS]   run a config (default: config.example.yaml)
  runner validate [--strict] [flags] PATH...
                                            check a config and lint its Lua; exit 1 listing every
                                            error (--strict: lint warnings too)
  runner schema                             print the JSON Schema of configuration files
  runner stubs [--luarc FILE] DIR           write LuaLS stubs of the Lua API, and .luarc.json
  runner send [flags] ADDR DEST TOPIC [JSON | - | @FILE]
                                            send a message on a running node (POST /v1/send)
  runner ask [flags] ADDR DEST TOPIC [JSON | - | @FILE]
                                            ask a running node's process; print the reply as JSON
  runner entries ADDR                       list a running node's entries
  runner tree ADDR                          print a running node's supervision trees
  runner version                            print the version

run 'runner run -h' for the flags of run; docs/cli.md has the details.
`

func main() {
	sigs := make(chan os.Signal, 2)
	// Only the commands that act on signals take them; for the others
	// (send, ask, …) Go's default stands: a stop signal ends the process,
	// even while it waits on a slow node or a FIFO named as a payload.
	if len(os.Args) > 1 && (os.Args[1] == "run" || os.Args[1] == "validate") {
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	}
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr, sigs, func() { os.Exit(1) }))
}

// cli runs one command and returns the exit code. force is called on a
// second stop signal.
func cli(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal, force func()) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		f, err := parseRun(args[1:], stderr)
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if err != nil {
			fmt.Fprintf(stderr, "runner run: %v\n", err)
			return 2
		}
		return run(f, stdout, stderr, sigs, force)
	case "validate":
		return validate(args[1:], stdout, stderr, sigs)
	case "schema":
		return schema(args[1:], stdout, stderr)
	case "stubs":
		return stubsCmd(args[1:], stdout, stderr)
	case "send", "ask", "entries", "tree":
		return remote(args[0], args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "runner %s %s %s/%s\n", buildVersion(), goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "runner: unknown command %q\n%s", args[0], usage)
	return 2
}

func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

func validate(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lf := addLoadFlags(fs)
	strict := fs.Bool("strict", false, "treat the warnings of the Lua lint as errors (exit 1)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: runner validate [--strict] [flags] PATH...")
		printFlags(stderr, fs)
	}
	paths, _, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "runner validate: %v\n", err)
		return 2
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "runner validate: no PATH: give the configuration's files or directories")
		fs.Usage()
		return 2
	}
	if err := lf.check(); err != nil {
		fmt.Fprintf(stderr, "runner validate: %v\n", err)
		return 2
	}
	log := logging.New(logging.Options{Writer: stderr, Level: slog.LevelWarn})
	kinds := node.DefaultKinds(io.Discard)
	cfg, sig, _, err := loadWatching(lf.loader(kinds, log), paths, sigs)
	if sig != nil {
		fmt.Fprintf(stderr, "runner validate: stopped by %s before the configuration was read\n", sig)
		return signalExit(sig)
	}
	if err != nil {
		printLoadErrors(stderr, err)
		return 1
	}
	if found := lint.Config(cfg, node.LuaHost(kinds).Surface()); len(found) > 0 {
		for _, f := range found {
			fmt.Fprintln(stderr, f.Error())
		}
		if *strict {
			fmt.Fprintf(stderr, "%s (--strict)\n", count(len(found), "error", "errors"))
			return 1
		}
		fmt.Fprintf(stderr, "%s of the Lua lint (errors with --strict)\n", count(len(found), "warning", "warnings"))
	}
	fmt.Fprintf(stdout, "ok: %s in %s\n", count(len(cfg.Entries), "entry", "entries"), count(len(cfg.Files), "file", "files"))
	return 0
}

// logLint logs the Lua lint's findings on cfg, once, as warnings.
func logLint(log *slog.Logger, kinds *registry.Registry, cfg *config.Config) {
	for _, f := range lint.Config(cfg, node.LuaHost(kinds).Surface()) {
		log.Warn("Lua lint: "+f.Msg, "at", f.Pos.String(), "entry", string(f.Entry))
	}
}

func printLoadErrors(w io.Writer, err error) {
	var es config.Errors
	if errors.As(err, &es) {
		for _, e := range es {
			fmt.Fprintln(w, e.Error())
		}
		fmt.Fprintln(w, count(len(es), "error", "errors"))
		return
	}
	fmt.Fprintln(w, err)
}

// joinWait bounds the wait for the first join at start-up (a variable:
// tests shorten it).
var joinWait = node.DefaultJoinWait

// startedHook, when a test sets it, is called with the app once its
// entries run, before the runner waits for a signal: the soak and
// root-death tests reach the node through it.
var startedHook func(*app)

// app is one `runner run`: its node, and the parts of it the runner and
// its tests reach.
type app struct {
	n    *node.Node
	node *process.Node
	rt   *runtime.Runtime
	root *supervisor.Root
}

func run(f *runFlags, stdout, stderr io.Writer, sigs <-chan os.Signal, force func()) int {
	if f.defaultPath {
		// The demo's configuration, when run from the repository. Anywhere
		// else, say how to start rather than that a file is missing.
		if _, err := os.Stat(defaultConfig); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "runner run: no configuration: give a PATH (a YAML file, or a directory of them) as in `runner run app.yaml`; without one it runs %s, which is not in this directory (docs/configuration.md describes the format; runner run --help lists the flags)\n", defaultConfig)
			return 2
		}
	}
	log := logging.New(logging.Options{Writer: stderr, Format: f.logFmt, Level: f.logLevel})
	f.memLimit.apply(log)
	kinds := node.DefaultKinds(stdout)
	loader := f.load.loader(kinds, log)
	// A stop signal while the configuration loads abandons the load; a
	// SIGHUP is remembered and reloads once started.
	cfg, sig, hupDuringStart, err := loadWatching(loader, f.paths, sigs)
	if sig != nil {
		log.Info("stopped while loading the configuration", "signal", sig.String())
		return 0
	}
	if err != nil {
		printLoadErrors(stderr, err)
		return 1
	}
	logLint(log, kinds, cfg)
	if f.mainID != "" {
		id, err := resolveMain(cfg, f.mainID)
		if err != nil {
			fmt.Fprintf(stderr, "runner run: --main %s: %v\n", f.mainID, err)
			return 1
		}
		f.mainID = string(id)
	}
	n, sig, hup, err := startWatching(node.Options{
		Paths: f.paths, Config: cfg, Loader: loader,
		Name: f.node, Logger: log, MaxProcesses: nodeMaxProcesses(f.maxProcs), DeadLetters: f.ops.keep(), Version: buildVersion(),
		Cluster: f.cluster.options(), JoinWait: joinWait,
		HTTP: f.http, HTTPToken: f.ops.token, Pprof: f.ops.pprof,
		NoWatch: f.noWatch,
	}, sigs, log, force)
	if sig != nil {
		if n != nil { // it started as the signal came
			shutdownWatching(n, sigs, log, force)
		}
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return 1
	}
	a := &app{n: n, node: n.Process(), rt: n.Runtime(), root: n.Root()}
	// SIGHUP reloads as a save does; the node logs the outcome. One
	// goroutine reloads, one SIGHUP waits for it and the others of a burst
	// are that one: a flood of signals costs no more than two reloads.
	hups := make(chan struct{}, 1)
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
		for range hups {
			if _, err := n.Reload(context.Background()); errors.Is(err, node.ErrReloadOff) {
				log.Info("SIGHUP ignored: reloading is off")
			}
		}
	}()
	defer func() {
		// The node has stopped by now: a reload under way has returned.
		close(hups)
		<-reloaded
	}()
	reload := func() {
		select {
		case hups <- struct{}{}:
		default:
		}
	}
	if hupDuringStart || hup {
		reload()
	}
	if startedHook != nil {
		startedHook(a)
	}
	var mainDone <-chan process.Exit
	if f.mainID != "" {
		var args []any
		if f.mainArgs != nil {
			args = make([]any, len(f.mainArgs))
			for i, s := range f.mainArgs {
				args[i] = s
			}
		}
		mainDone, err = spawnMain(a.node, a.rt, registry.ID(f.mainID), args)
		if err != nil {
			fmt.Fprintf(stderr, "runner run: --main %s: %v\n", f.mainID, err)
			shutdownWatching(n, sigs, log, force)
			return 1
		}
	}

	code := 0
	for done := false; !done; {
		select {
		case <-a.root.Done():
			// Nothing restarts a failed entry any more: carrying on
			// would look healthy while it is not.
			log.Error("root supervisor died: failed entries would no longer be restarted; stopping", "error", a.root.Exit().Err)
			code = 1
			done = true
		case s := <-sigs:
			if s == syscall.SIGHUP {
				reload()
				continue
			}
			log.Info("stopping", "signal", s.String())
			done = true
		case ex := <-mainDone:
			if ex.Err != nil {
				ve := value.FromError(ex.Err)
				fmt.Fprintf(stderr, "runner: %s: %s: %s\n", f.mainID, ve.Kind, ve.String())
				code = 1
			}
			done = true
		}
	}
	shutdownWatching(n, sigs, log, force)
	return code
}

// startWatching starts the node. A stop signal meanwhile cancels the start
// (and is returned; n is then nil unless the start had finished), a
// second one forces exit while the start is undone; a SIGHUP is reported
// through hup: it reloads once the node runs.
func startWatching(opts node.Options, sigs <-chan os.Signal, log *slog.Logger, force func()) (n *node.Node, sig os.Signal, hup bool, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		n   *node.Node
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := node.Start(ctx, opts)
		done <- result{n, err}
	}()
	for {
		select {
		case r := <-done:
			return r.n, sig, hup, r.err
		case s := <-sigs:
			switch {
			case s == syscall.SIGHUP:
				hup = true
			case sig == nil:
				sig = s
				cancel()
			default:
				log.Warn("second signal: exiting at once", "signal", s.String())
				force()
			}
		}
	}
}

// shutdownWatching stops n; a second stop signal meanwhile forces exit.
func shutdownWatching(n *node.Node, sigs <-chan os.Signal, log *slog.Logger, force func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGHUP {
					continue
				}
				log.Warn("second signal: exiting at once", "signal", s.String())
				force()
				return
			case <-done:
				return
			}
		}
	}()
	_ = n.Stop(context.Background()) // what failed is logged
	close(done)
}

// spawnMain spawns the --main entry under a watcher process that reports
// its exit.
func spawnMain(node *process.Node, rt *runtime.Runtime, id registry.ID, args []any) (<-chan process.Exit, error) {
	res := make(chan process.Exit, 1)
	// The watcher is the runtime's (System): a script that stopped it
	// would leave the runner waiting for ever.
	watcher, err := node.SpawnFunc(func(p *process.Proc) (any, error) {
		for {
			if e, ok := p.TryEvent(); ok {
				if e.Kind == process.EventExit {
					res <- e.Exit
					return nil, nil
				}
				continue
			}
			p.Arm()
			if e, ok := p.TryEvent(); ok {
				p.Disarm()
				if e.Kind == process.EventExit {
					res <- e.Exit
					return nil, nil
				}
				continue
			}
			select {
			case <-p.Wake():
			case <-p.Context().Done():
				return nil, nil
			}
		}
	}, process.SpawnOptions{System: true})
	if err != nil {
		return nil, err
	}
	if _, err := rt.Spawn(id, registry.SpawnOptions{SpawnOptions: process.SpawnOptions{MonitorBy: watcher}, Args: args}); err != nil {
		node.Terminate(watcher)
		return nil, err
	}
	return res, nil
}
