package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/cluster"
	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/promreg"
	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/observe"
	"github.com/proctor-run/proctor/pgdist"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
	"github.com/proctor-run/proctor/value"
)

// ErrReloadOff is what Reload returns when the node cannot reload: its
// watcher did not start (Start logged why).
var ErrReloadOff = value.Sentinel("node.reload_off", value.KindStopped, "reloading is off")

// stopGrace bounds the root supervisor's stop and the HTTP API's
// draining, once the entries have stopped within their own deadlines.
const stopGrace = 5 * time.Second

// Node is one running Proctor node: a process node, its entries under the
// root supervisor, and what Options asked for besides (a cluster
// membership, the HTTP API, a watcher of the configuration's files).
// Its methods are safe for concurrent use.
type Node struct {
	opts    Options
	log     *slog.Logger
	proc    *process.Node
	dead    *observe.DeadLetters
	metrics *prometheus.Registry
	cluster *cluster.Cluster    // nil on a node alone
	pg      *pgdist.Distributor // the pg scopes' part in the cluster; nil alone
	rt      *runtime.Runtime
	root    *supervisor.Root
	srv     *observe.Server  // nil without Options.HTTP
	watcher *runtime.Watcher // nil when reloading is off

	stopOnce sync.Once
	stopErr  error
}

// Start starts a node: it loads the configuration (unless Options.Config
// holds it), starts the process node, joins the cluster, starts the root
// supervisor and the configuration's entries, serves the HTTP API and
// watches the files. When ctx ends before the entries run, or any step
// fails, what started is stopped again and the error returned (a
// configuration's problems as config.Errors). ctx bounds only the start.
func Start(ctx context.Context, opts Options) (*Node, error) {
	if len(opts.Paths) == 0 {
		return nil, errors.New("node: Options.Paths names no configuration file or directory")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Loader == nil {
		opts.Loader = &config.Loader{Logger: opts.Logger}
	}
	if opts.Loader.Kinds == nil {
		stdout := opts.Stdout
		if stdout == nil {
			stdout = os.Stdout
		}
		opts.Loader.Kinds = DefaultKinds(stdout)
	}
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	if opts.JoinWait <= 0 {
		opts.JoinWait = DefaultJoinWait
	}
	cfg := opts.Config
	if cfg == nil {
		var err error
		if cfg, err = opts.Loader.LoadContext(ctx, opts.Paths...); err != nil {
			return nil, err
		}
	}
	n := &Node{opts: opts, log: opts.Logger, metrics: opts.Metrics}
	if err := n.start(ctx, cfg); err != nil {
		_ = n.Stop(context.Background())
		return nil, err
	}
	return n, nil
}

// start does Start's work in order; on error the caller stops what it left.
func (n *Node) start(ctx context.Context, cfg *config.Config) error {
	opts, log := n.opts, n.log
	observe.RegisterStandardCollectors(n.metrics)
	observe.RegisterBuildInfo(n.metrics, opts.Version)
	n.dead = observe.NewDeadLetters(observe.DeadLetterOptions{Keep: opts.DeadLetters, Metrics: n.metrics, Logger: log})
	// A pg message to a scope not running here yet is the protocol at
	// work (every joining node gets some), not a lost message.
	n.proc = process.NewNode(process.Options{Name: opts.Name, Logger: log, DeadLetters: pgdist.QuietDeadLetters(n.dead), MaxProcesses: opts.MaxProcesses})
	if err := n.joinCluster(ctx); err != nil {
		return err
	}
	health := observe.NewHealth()
	rtOpts := runtime.RuntimeOptions{Node: n.proc, Kinds: opts.Loader.Kinds, Logger: log, Metrics: n.metrics, Health: health}
	if n.cluster != nil {
		// Another live member with this node's name, seen after the start.
		health.SetCheck("cluster", n.cluster.Err)
		// Every pg scope, started now or by a reload, spans the cluster.
		rtOpts.Cluster = n.pg
	}
	n.rt = runtime.NewRuntime(rtOpts)
	root, err := supervisor.StartRoot(supervisor.RootOptions{Node: n.proc, Runtime: n.rt, Logger: log})
	if err != nil {
		return err
	}
	n.root = root
	n.rt.SetOwner(root)
	if opts.HTTP != "" {
		hopts := observe.Options{Runtime: n.rt, Health: health, Metrics: n.metrics, Logger: log, Ops: observe.Ops{
			Node: n.proc, DeadLetters: n.dead, Reloads: n.rt, Token: opts.HTTPToken, Pprof: opts.Pprof, Live: n.live,
		}}
		if n.cluster != nil {
			hopts.Cluster = n.cluster
		}
		if n.srv, err = observe.Listen(opts.HTTP, observe.Handler(hopts), observe.ListenOptions{Logger: log}); err != nil {
			return err
		}
		log.Info("serving HTTP", "addr", n.srv.Addr().String())
	}
	if err := n.rt.Start(ctx, cfg); err != nil {
		return err
	}
	running := 0
	for _, in := range n.rt.Entries() {
		if in.Status == runtime.StatusRunning {
			running++
		}
	}
	wopts := runtime.WatchOptions{Runtime: n.rt, Loader: opts.Loader, Paths: opts.Paths, Config: cfg, Logger: log, Manual: opts.NoWatch}
	if n.watcher, err = runtime.Watch(wopts); err != nil {
		// Without change notifications Reload (SIGHUP) is the way to
		// reload: keep it.
		log.Warn("cannot watch the configuration; SIGHUP still reloads it", "error", err)
		wopts.Manual = true
		if n.watcher, err = runtime.Watch(wopts); err != nil {
			log.Warn("reloading is off", "error", err)
		}
	}
	// Logged once the files are watched: a save from then on is seen, and
	// one made before, while the entries started, is found by the
	// watcher's look again a debounce period later (Watch's rescan).
	log.Info("started", "node", n.proc.Name(), "entries", len(cfg.Entries), "running", running)
	return nil
}

// joinCluster starts the cluster membership and the pg distribution when
// Options.Cluster asks for them, and waits (JoinWait at most) for the
// first seed, so that entries that talk to other nodes find them.
func (n *Node) joinCluster(ctx context.Context) error {
	if n.opts.Cluster == nil {
		return nil
	}
	copts := *n.opts.Cluster
	copts.Node = n.proc
	if copts.Logger == nil {
		copts.Logger = n.log
	}
	c, err := cluster.Start(copts)
	if err != nil {
		return err
	}
	n.cluster = c
	promreg.Register(n.metrics, observe.NewClusterCollector(c))
	if n.pg, err = pgdist.New(n.proc, pgdist.FromCluster(c), pgdist.Options{Logger: n.log, Metrics: n.metrics}); err != nil {
		return err
	}
	if len(copts.Join) == 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, n.opts.JoinWait)
	defer cancel()
	if err := c.WaitMembers(wctx, 1); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n.log.Warn("no seed answered yet: starting alone; joining goes on in the background",
			"seeds", copts.Join, "waited", n.opts.JoinWait.String(), "hint", noSeedHint(copts))
	}
	return nil
}

// noSeedHint says what usually keeps seeds from answering. A seed that
// runs with another secret looks exactly like one that does not run: it
// cannot decrypt the join and drops it (only the seed logs why).
func noSeedHint(c cluster.Options) string {
	if c.Secret != nil {
		return "check that the seeds run and listen on these addresses, and that their --cluster-secret-file holds the same secret as this node's (cluster.Options.Secret, embedded): a seed with another secret cannot decrypt the join and drops it, which looks the same from here"
	}
	return "check that the seeds run and listen on these addresses, and that they run without --cluster-secret-file (cluster.Options.Secret, embedded) too: nodes with and without a secret cannot talk"
}

// live is /livez: the node is alive while its root supervisor runs.
func (n *Node) live() error {
	select {
	case <-n.root.Done():
		return fmt.Errorf("the root supervisor died: %v", n.root.Exit().Err)
	default:
		return nil
	}
}

// Reload reads the configuration's files again, with the environment, and
// puts what they hold in force, as a save of a watched file or the
// runner's SIGHUP does; it returns what changed, or why nothing did (a
// rejected configuration's config.Errors). A reload under way finishes
// first. ctx bounds the wait, not the reload. After Stop it returns
// runtime.ErrWatcherClosed. A save of a watched file reloads without it;
// Runtime().LastReload() says what that reload did.
func (n *Node) Reload(ctx context.Context) (runtime.ReloadSummary, error) {
	if n.watcher == nil {
		return runtime.ReloadSummary{}, ErrReloadOff
	}
	return n.watcher.Reload(ctx)
}

// Stop stops the node: the watcher, every entry in reverse dependency
// order (each within its stop deadline, or ctx's when it ends first), the
// root supervisor, the cluster membership (a graceful leave: the other
// nodes see a leave, not a failure) and the HTTP API. What went wrong is
// logged and returned; a second Stop returns the first one's result.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.stop(ctx) })
	return n.stopErr
}

func (n *Node) stop(ctx context.Context) error {
	var errs []error
	fail := func(what string, err error) {
		n.log.Warn(what, "error", err)
		errs = append(errs, fmt.Errorf("%s: %w", what, err))
	}
	if n.watcher != nil {
		_ = n.watcher.Close()
	}
	if n.rt != nil {
		if err := n.rt.Stop(ctx); err != nil {
			fail("stopping entries", err)
		}
	}
	gctx, cancel := context.WithTimeout(ctx, stopGrace)
	defer cancel()
	if n.root != nil {
		n.root.Stop(gctx)
	}
	if n.pg != nil {
		n.pg.Close()
	}
	if n.cluster != nil {
		// Entries are stopped: leave, so the others see a leave rather
		// than a failure.
		if err := n.cluster.Close(); err != nil {
			fail("leaving the cluster", err)
		}
	}
	if n.srv != nil {
		if err := n.srv.Shutdown(gctx); err != nil {
			fail("stopping HTTP", err)
		}
	}
	if n.dead != nil {
		n.dead.Close()
	}
	n.log.Info("stopped")
	return errors.Join(errs...)
}

// Process returns the process node: spawn, send to and ask processes, and
// resolve the names entries register (their IDs).
func (n *Node) Process() *process.Node { return n.proc }

// Runtime returns the running set of entries: their states, the
// configuration in force, reload history, spawning from a template.
func (n *Node) Runtime() *runtime.Runtime { return n.rt }

// Root returns the root supervisor, which restarts failed entries. Its
// Done is closed when it died: nothing restarts a failed entry any more,
// and the runner stops.
func (n *Node) Root() *supervisor.Root { return n.root }

// Kinds returns the kinds the node runs (Options.Loader's).
func (n *Node) Kinds() *registry.Registry { return n.opts.Loader.Kinds }

// Cluster returns the node's cluster membership, nil on a node alone.
func (n *Node) Cluster() *cluster.Cluster { return n.cluster }

// HTTPAddr returns the address the HTTP API listens on (with the port
// picked for port 0), nil without Options.HTTP.
func (n *Node) HTTPAddr() net.Addr {
	if n.srv == nil {
		return nil
	}
	return n.srv.Addr()
}

// Metrics returns the registry of the node's series (Options.Metrics, or
// the one Start made).
func (n *Node) Metrics() *prometheus.Registry { return n.metrics }

// DeadLetters returns the node's dead letters: counted, logged, the
// latest kept (Options.DeadLetters).
func (n *Node) DeadLetters() *observe.DeadLetters { return n.dead }
