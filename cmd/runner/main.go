// Command runner runs, validates and reports on Proctor configurations.
// It only parses flags, wires the packages together and turns outcomes
// into exit codes; see docs/cli.md.
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
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/cluster"
	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/lua/lint"
	"github.com/proctor-run/proctor/observe"
	"github.com/proctor-run/proctor/pgdist"
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
	kinds := newKinds(io.Discard, nil)
	cfg, sig, _, err := loadWatching(lf.loader(kinds, log), paths, sigs)
	if sig != nil {
		fmt.Fprintf(stderr, "runner validate: stopped by %s before the configuration was read\n", sig)
		return signalExit(sig)
	}
	if err != nil {
		printLoadErrors(stderr, err)
		return 1
	}
	if found := lint.Config(cfg, hostOf(kinds).Surface()); len(found) > 0 {
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
	for _, f := range lint.Config(cfg, hostOf(kinds).Surface()) {
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
var joinWait = 10 * time.Second

// noSeedHint says what usually keeps seeds from answering. A seed that
// runs with another secret looks exactly like one that does not run: it
// cannot decrypt the join and drops it (only the seed logs why).
func noSeedHint(c clusterConfig) string {
	if c.Secret != nil {
		return "check that the seeds run and listen on these addresses, and that their --cluster-secret-file holds the same secret as this node's: a seed with another secret cannot decrypt the join and drops it, which looks the same from here"
	}
	return "check that the seeds run and listen on these addresses, and that they run without --cluster-secret-file too: nodes with and without a secret cannot talk"
}

// startedHook, when a test sets it, is called with the app once its
// entries run, before the runner waits for a signal: the soak and
// root-death tests reach the node through it.
var startedHook func(*app)

// app is one `runner run`: the runtime and what serves it.
type app struct {
	log     *slog.Logger
	node    *process.Node
	rt      *runtime.Runtime
	root    *supervisor.Root
	srv     *observe.Server
	watcher *runtime.Watcher
	dead    *observe.DeadLetters
	cluster *cluster.Cluster    // nil without --cluster-bind
	pg      *pgdist.Distributor // the pg scopes' part in the cluster; nil without it
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
	pg := &pgCluster{}
	kinds := newKinds(stdout, pg)
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
	a := &app{log: log}
	metrics := prometheus.NewRegistry()
	observe.RegisterStandardCollectors(metrics)
	observe.RegisterBuildInfo(metrics, buildVersion())
	a.dead = observe.NewDeadLetters(observe.DeadLetterOptions{Keep: f.ops.keep(), Metrics: metrics, Logger: log})
	// A pg message to a scope not running here yet is the protocol at
	// work (every joining node gets some), not a lost message.
	a.node = process.NewNode(process.Options{Name: f.node, Logger: log, DeadLetters: pgdist.QuietDeadLetters(a.dead), MaxProcesses: nodeMaxProcesses(f.maxProcs)})
	if f.cluster.enabled() {
		a.cluster, err = cluster.Start(cluster.Options{
			Node: a.node, Bind: f.cluster.Bind, TransportBind: f.cluster.TransportBind,
			Join: f.cluster.Join, Secret: f.cluster.Secret, TLS: f.cluster.TLS, Insecure: f.cluster.Insecure, Logger: log,
		})
		if err != nil {
			fmt.Fprintf(stderr, "runner run: %v\n", err)
			a.dead.Close()
			return 1
		}
		metrics.MustRegister(observe.NewClusterCollector(a.cluster))
		a.pg, err = pgdist.New(a.node, pgdist.FromCluster(a.cluster), pgdist.Options{Logger: log, Metrics: metrics})
		if err != nil {
			fmt.Fprintf(stderr, "runner run: %v\n", err)
			_ = a.cluster.Close()
			a.dead.Close()
			return 1
		}
		pg.d.Store(a.pg)
		if len(f.cluster.Join) > 0 {
			// Entries that talk to other nodes find them: wait (a
			// while) for the first join before starting them.
			ctx, cancel := context.WithTimeout(context.Background(), joinWait)
			if err := a.cluster.WaitMembers(ctx, 1); err != nil {
				log.Warn("no seed answered yet: starting alone; joining goes on in the background",
					"seeds", f.cluster.Join, "waited", joinWait.String(), "hint", noSeedHint(f.cluster))
			}
			cancel()
		}
	}
	health := observe.NewHealth()
	if a.cluster != nil {
		// Another live member with this node's name, seen after the start.
		health.SetCheck("cluster", a.cluster.Err)
	}
	a.rt = runtime.NewRuntime(runtime.RuntimeOptions{Node: a.node, Kinds: kinds, Logger: log, Metrics: metrics, Health: health})
	a.root, err = supervisor.StartRoot(supervisor.RootOptions{Node: a.node, Runtime: a.rt, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		a.rt.Stop(context.Background())
		a.dead.Close()
		if a.cluster != nil {
			_ = a.cluster.Close()
		}
		return 1
	}
	a.rt.SetOwner(a.root)
	if f.http != "" {
		opts := observe.Options{Runtime: a.rt, Health: health, Metrics: metrics, Logger: log, Ops: a.ops(f.ops)}
		if a.cluster != nil {
			opts.Cluster = a.cluster
		}
		a.srv, err = observe.Listen(f.http, observe.Handler(opts), observe.ListenOptions{Logger: log})
		if err != nil {
			fmt.Fprintf(stderr, "runner run: %v\n", err)
			a.shutdown()
			return 1
		}
		log.Info("serving HTTP", "addr", a.srv.Addr().String())
	}

	// A stop signal during start-up cancels it; SIGHUP (reload) waits for
	// start-up to finish.
	startCtx, cancelStart := context.WithCancel(context.Background())
	startErr := make(chan error, 1)
	go func() { startErr <- a.rt.Start(startCtx, cfg) }()
	for waiting := true; waiting; {
		select {
		case err = <-startErr:
			waiting = false
		case s := <-sigs:
			if s == syscall.SIGHUP {
				hupDuringStart = true
				continue
			}
			sig = s
			cancelStart()
			err = <-startErr
			waiting = false
		}
	}
	cancelStart()
	if err != nil || sig != nil {
		if err != nil && sig == nil {
			fmt.Fprintf(stderr, "runner run: %v\n", err)
		}
		a.shutdownWatching(sigs, force)
		if sig != nil {
			return 0
		}
		return 1
	}
	running := 0
	for _, in := range a.rt.Entries() {
		if in.Status == runtime.StatusRunning {
			running++
		}
	}
	wopts := runtime.WatchOptions{Runtime: a.rt, Loader: loader, Paths: f.paths, Config: cfg, Logger: log, Manual: f.noWatch}
	a.watcher, err = runtime.Watch(wopts)
	if err != nil {
		// Without change notifications SIGHUP is the way to reload: keep it.
		log.Warn("cannot watch the configuration; SIGHUP still reloads it", "error", err)
		wopts.Manual = true
		a.watcher, err = runtime.Watch(wopts)
		if err != nil {
			log.Warn("reloading is off", "error", err)
		}
	}
	// Logged once the files are watched: a save from then on is seen (one
	// made before, while the entries started, is not).
	log.Info("started", "node", a.node.Name(), "entries", len(cfg.Entries), "running", running)
	if hupDuringStart && a.watcher != nil {
		a.watcher.Trigger()
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
			a.shutdownWatching(sigs, force)
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
				if a.watcher != nil {
					a.watcher.Trigger()
				} else {
					log.Info("SIGHUP ignored: reloading is off")
				}
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
	a.shutdownWatching(sigs, force)
	return code
}

// shutdownWatching shuts down; a second stop signal meanwhile forces exit.
func (a *app) shutdownWatching(sigs <-chan os.Signal, force func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGHUP {
					continue
				}
				a.log.Warn("second signal: exiting at once", "signal", s.String())
				force()
				return
			case <-done:
				return
			}
		}
	}()
	a.shutdown()
	close(done)
}

// shutdown stops the watcher, every entry in reverse dependency order
// (each within its deadline), the root supervisor and the HTTP endpoint.
func (a *app) shutdown() {
	if a.watcher != nil {
		a.watcher.Close()
	}
	if err := a.rt.Stop(context.Background()); err != nil {
		a.log.Warn("stopping entries", "error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if a.root != nil {
		a.root.Stop(ctx)
	}
	if a.pg != nil {
		a.pg.Close()
	}
	if a.cluster != nil {
		// Entries are stopped: leave, so the others see a leave rather
		// than a failure.
		if err := a.cluster.Close(); err != nil {
			a.log.Warn("leaving the cluster", "error", err)
		}
	}
	if a.srv != nil {
		if err := a.srv.Shutdown(ctx); err != nil {
			a.log.Warn("stopping HTTP", "error", err)
		}
	}
	if a.dead != nil {
		a.dead.Close()
	}
	a.log.Info("stopped")
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
