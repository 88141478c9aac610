package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/internal/promreg"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Status is where an entry is in its life.
type Status string

const (
	// StatusDefined: declared; not running (a definition, or not started yet).
	StatusDefined Status = "defined"
	// StatusStarting: being started, or waiting for a restart after a failure.
	StatusStarting Status = "starting"
	// StatusRunning: its instance runs.
	StatusRunning Status = "running"
	// StatusStopping: being stopped.
	StatusStopping Status = "stopping"
	// StatusStopped: it ran and stopped (shut down, or a transient or
	// temporary entry stopped on request).
	StatusStopped Status = "stopped"
	// StatusCompleted: a one-shot entry (restart type transient or
	// temporary) returned normally. It counts as ready, and what depends
	// on it starts.
	StatusCompleted Status = "completed"
	// StatusFailed: it failed more often than its restart policy allows.
	StatusFailed Status = "failed"
)

// Owner supervises the entries a Runtime starts: the root supervisor. The
// runtime stays the authority on what is current; the owner reports exits
// through Exited and restarts through Restart, and the runtime turns away
// any instance it has meanwhile stopped or replaced (ErrNotCurrent).
type Owner interface {
	// Watch is told of every instance the runtime started. It is called
	// on the runtime's loop and must not block.
	Watch(id registry.ID, inst registry.Instance)
	// PID is the owner's process, which every Start is asked to have
	// monitor the instance from its spawn (registry.StartOptions).
	PID() process.PID
}

// RuntimeOptions configure a Runtime. Node is required; the zero value of
// every other field is a usable default.
type RuntimeOptions struct {
	Node *process.Node
	// Kinds resolve entries' kinds. Default: an empty registry.
	Kinds *registry.Registry
	// Logger for the runtime and, through Env, every entry. Default: slog.Default().
	Logger *slog.Logger
	// Metrics is the registry /metrics serves. Default: a new one.
	Metrics *prometheus.Registry
	// Health receives the runtime's checks. Default: checks are dropped.
	Health registry.HealthRegistry
	// StartTimeout bounds the Start of an entry without
	// lifecycle.start_timeout. Default: DefaultStartTimeout (30s).
	StartTimeout time.Duration
	// StopTimeout bounds the stop of an entry without
	// lifecycle.stop_timeout (unless its instance is a ShutdownTimer),
	// after which its process is killed. Default: DefaultStopTimeout (5s).
	StopTimeout time.Duration
	// ReloadHistory is how many reload attempts ReloadHistory keeps.
	// Default: DefaultReloadHistory (20).
	ReloadHistory int
	// Cluster is Env.Cluster for every entry: the node's cluster layer as
	// kinds that span nodes use it. Default: none (a node alone).
	Cluster any
}

// EntryState is an entry's published state: immutable, replaced whole.
type EntryState struct {
	Status   Status
	Instance registry.Instance // the current (or last) instance; nil when never started
	Err      error             // the last failure (or what a waiting start waits for), nil when none
	Restarts int               // restarts by the owner since the entry was (re)configured
	Since    time.Time
}

// EntryInfo is one entry as the runtime sees it: its declaration and state.
type EntryInfo struct {
	Entry *registry.Entry
	EntryState
	// Outdated counts the live processes a script spawned from an older
	// definition of the entry (before the reload that changed it): no
	// supervisor restarts them, so they keep their old code until they
	// exit. Routees a pool kept because their renewal failed count too.
	Outdated int
}

type slot struct {
	entry *registry.Entry
	state atomic.Pointer[EntryState]
}

func (s *slot) set(st EntryState) {
	// What views show of the error: a script's error of any size would
	// otherwise be held here and sent whole to every view.
	st.Err = value.ClippedError(st.Err)
	if st.Since.IsZero() {
		st.Since = time.Now()
	}
	s.state.Store(&st)
}

// snapshot is the configuration in force with each entry's state. The map
// is replaced only when the configuration changes; states change through
// their own atomic pointers.
type snapshot struct {
	cfg   *config.Config
	slots map[registry.ID]*slot
}

// Runtime runs a configuration: it starts entries in dependency order,
// stops them in reverse, serves registry.Lookup to the kinds and tells its Owner of
// every instance. All changes go through one loop goroutine; readers
// (Lookup, Entries, the HTTP views) read snapshots and never wait on it.
type Runtime struct {
	opts     RuntimeOptions
	log      *slog.Logger
	env      *registry.Env
	reports  *reports    // env.Reports
	upgrades *upgradeLog // hot upgrades (upgrade.go)
	owner    atomic.Pointer[ownerBox]
	loop     *process.Loop
	cancel   context.CancelFunc
	snap     atomic.Pointer[snapshot]
	stopped  atomic.Bool
	// halt is closed when Stop begins: starts in progress are abandoned
	// (see callStart) and the orphans count them until they end.
	halt     chan struct{}
	haltOnce sync.Once
	orphans  sync.WaitGroup

	restarts *prometheus.CounterVec
	reloads  *prometheus.CounterVec
	// A crash loop logs each entry's failures and restarts a few times a
	// window, then counts them (internal/logging.Limiter).
	failLogs, restartLogs *logging.Limiter
	spawned               spawnIndex
	history               *reloadHistory

	// Owned by the loop.
	failedHC map[registry.ID]bool          // which entries have a failure health check
	runSet   map[registry.ID]bool          // what the configuration in force runs
	waiting  map[registry.ID]*waitingStart // starts waiting for tasks to complete
	startup  *startupWatch                 // Start waiting for those, if it is
}

type ownerBox struct{ o Owner }

type nopHealth struct{}

func (nopHealth) SetCheck(string, func() error) {}
func (nopHealth) RemoveCheck(string)            {}

// NewRuntime returns a runtime with an empty configuration. Its loop runs
// until Stop.
func NewRuntime(opts RuntimeOptions) *Runtime {
	if opts.Node == nil {
		panic("registry: RuntimeOptions.Node is required")
	}
	if opts.Kinds == nil {
		opts.Kinds = registry.NewRegistry()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	if opts.Health == nil {
		opts.Health = nopHealth{}
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = registry.DefaultStartTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = registry.DefaultStopTimeout
	}
	if opts.ReloadHistory <= 0 {
		opts.ReloadHistory = DefaultReloadHistory
	}
	rt := &Runtime{opts: opts, log: opts.Logger, failedHC: map[registry.ID]bool{}, waiting: map[registry.ID]*waitingStart{},
		failLogs: &logging.Limiter{}, restartLogs: &logging.Limiter{}, halt: make(chan struct{})}
	rt.env = &registry.Env{Node: opts.Node, Logger: opts.Logger, Metrics: opts.Metrics, Health: opts.Health, Entries: rt, Instances: &registry.Directory{}, Cluster: opts.Cluster,
		StartDefault: opts.StartTimeout, StopDefault: opts.StopTimeout}
	rt.reports = &reports{renewals: &renewalLog{}, entries: rt}
	rt.env.Reports = rt.reports
	rt.upgrades = newUpgradeLog(opts.Metrics)
	rt.snap.Store(&snapshot{cfg: &config.Config{Entries: map[registry.ID]*registry.Entry{}, Deps: map[registry.ID][]registry.ID{}}, slots: map[registry.ID]*slot{}})
	rt.restarts = promreg.Register(opts.Metrics, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "runner_entry_restarts_total",
		Help: "Restarts of entries by the root supervisor.",
	}, []string{"entry"}))
	rt.reloads = promreg.Register(opts.Metrics, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "runner_reload_total",
		Help: "Configuration reloads, by result (applied or rejected).",
	}, []string{"result"}))
	rt.history = newReloadHistory(opts.Metrics, opts.ReloadHistory)
	rt.reports.settles = &settleLog{history: rt.history}
	for _, r := range reloadResults {
		// Every result is a series from the start, at 0, so a rate or an
		// alert on rejections works before the first one.
		rt.reloads.WithLabelValues(r)
	}
	promreg.Register(opts.Metrics, prometheus.Collector(&outdatedCollector{rt: rt, desc: prometheus.NewDesc(
		"runner_outdated_processes", "Live processes left on an older definition of an entry (spawned by a script, or kept by a pool whose renewal failed), by entry.", []string{"entry"}, nil)}))
	// A second runtime on the same registry reports through the first's
	// status collector.
	promreg.Register(opts.Metrics, prometheus.Collector(&statusCollector{rt: rt, desc: prometheus.NewDesc(
		"runner_entries", "Entries of the configuration in force, by status.", []string{"status"}, nil)}))
	rt.loop = process.NewLoop(process.LoopOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	rt.cancel = cancel
	go rt.loop.Run(ctx)
	return rt
}

type statusCollector struct {
	rt   *Runtime
	desc *prometheus.Desc
}

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[Status]int{}
	for _, s := range c.rt.snap.Load().slots {
		counts[c.rt.observed(s).Status]++
	}
	for _, st := range []Status{StatusDefined, StatusStarting, StatusRunning, StatusStopping, StatusStopped, StatusCompleted, StatusFailed} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
}

// Env returns the environment kinds get.
func (rt *Runtime) Env() *registry.Env { return rt.env }

// SetOwner installs the supervisor of the entries; call it before Start.
func (rt *Runtime) SetOwner(o Owner) { rt.owner.Store(&ownerBox{o}) }

// Config returns the configuration in force.
func (rt *Runtime) Config() *config.Config { return rt.snap.Load().cfg }

// do runs fn on the loop and waits for it, or for ctx (whose error it then
// returns).
func (rt *Runtime) do(ctx context.Context, fn func()) error {
	if rt.stopped.Load() {
		return ErrRuntimeStopped
	}
	return process.RunOnAs(ctx, rt.loop, process.CommandFunc(func() error { fn(); return nil }), process.CallOptions{},
		process.CallErrors{Stopped: ErrRuntimeStopped})
}

// Start puts cfg in force and starts what must run: every auto_start entry
// and what it needs running, dependencies first. When an entry fails to
// start, everything already started is stopped again and the error is
// returned: a configuration that cannot come up does not half-run.
//
// An entry that depends on a task (restart type transient or temporary)
// starts once the task has completed: Start returns when every such entry
// has started too, or stops everything again when one cannot.
func (rt *Runtime) Start(ctx context.Context, cfg *config.Config) error {
	var err error
	var w *startupWatch
	if derr := rt.do(ctx, func() { err = rt.start(ctx, cfg); w = rt.startup }); derr != nil {
		return derr
	}
	if err != nil || w == nil {
		return err
	}
	select {
	case <-w.done:
		err = w.err
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		// Nothing half-runs: stop what started while the rest waited.
		_ = rt.do(context.Background(), func() { rt.stopAll() })
	}
	return err
}

func newSlots(cfg *config.Config) map[registry.ID]*slot {
	slots := make(map[registry.ID]*slot, len(cfg.Entries))
	for id, e := range cfg.Entries {
		s := &slot{entry: e}
		s.set(EntryState{Status: StatusDefined})
		slots[id] = s
	}
	return slots
}

func (rt *Runtime) start(ctx context.Context, cfg *config.Config) error {
	snap := &snapshot{cfg: cfg, slots: newSlots(cfg)}
	rt.snap.Store(snap)
	rt.runSet = runSet(cfg, rt.opts.Kinds)
	for _, id := range cfg.Order {
		if !rt.runSet[id] {
			continue
		}
		if err := rt.launch(ctx, snap, id); err != nil {
			rt.stopAll()
			return err
		}
	}
	if len(rt.waiting) > 0 {
		rt.startup = &startupWatch{done: make(chan struct{})}
	}
	return nil
}

// stopAll stops every entry in reverse dependency order; on the loop.
func (rt *Runtime) stopAll() {
	if w := rt.startup; w != nil {
		// Start waits no more: what it waited for is being stopped.
		rt.startup = nil
		w.err = ErrRuntimeStopped
		close(w.done)
	}
	snap := rt.snap.Load()
	ids := slices.Clone(snap.cfg.Order)
	slices.Reverse(ids)
	rt.stopEntries(snap, ids)
}

// runSet returns the entries that must run for cfg: every auto_start entry
// and, transitively, what they reference with RefRunning — also through
// definitions they instantiate (a pool's routee may depend on a scope).
// Entries whose kind is not a registry.Starter never run; they only exist.
func runSet(cfg *config.Config, kinds *registry.Registry) map[registry.ID]bool {
	run := map[registry.ID]bool{}
	visited := map[registry.ID]bool{}
	var visit func(id registry.ID, running bool)
	visit = func(id registry.ID, running bool) {
		e, ok := cfg.Entries[id]
		if !ok {
			return
		}
		if running {
			k, _ := kinds.Kind(e.Kind)
			if _, ok := k.(registry.Starter); !ok {
				running = false
			}
		}
		if running {
			if run[id] {
				return
			}
			run[id] = true
		} else {
			if visited[id] {
				return
			}
			visited[id] = true
		}
		for _, r := range e.Refs {
			visit(r.To, r.Mode == registry.RefRunning)
		}
	}
	for _, id := range cfg.Order {
		if cfg.Entries[id].Lifecycle.AutoStart {
			visit(id, true)
		}
	}
	return run
}

// startEntry starts id; on the loop.
func (rt *Runtime) startEntry(ctx context.Context, id registry.ID) error {
	s := rt.snap.Load().slots[id]
	e := s.entry
	k, _ := rt.opts.Kinds.Kind(e.Kind)
	st, ok := k.(registry.Starter)
	if !ok {
		return fmt.Errorf("start %s: %w", id, ErrNotStarter)
	}
	prev := s.state.Load()
	s.set(EntryState{Status: StatusStarting, Restarts: prev.Restarts})
	inst, err := rt.callStart(ctx, st, e)
	if err != nil {
		s.set(EntryState{Status: StatusFailed, Err: err, Restarts: prev.Restarts})
		rt.setFailedCheck(id, err)
		if errors.Is(err, ErrRuntimeStopped) {
			// Stopping abandoned it (see callStart): not the entry's fault.
			rt.log.Info("entry not started: the runtime is stopping", "entry", string(id))
		} else {
			rt.log.Error("entry failed to start", "entry", string(id), "error", e.ShowError(err))
		}
		return fmt.Errorf("start %s: %w", id, err)
	}
	// callStart had the owner watch the instance before it is published,
	// so no one can reach it (and end it) before its exit would be seen.
	s.set(EntryState{Status: StatusRunning, Instance: inst, Restarts: prev.Restarts})
	rt.clearFailedCheck(id)
	rt.log.Debug("entry started", "entry", string(id), "pid", inst.PID().String())
	return nil
}

func (rt *Runtime) setFailedCheck(id registry.ID, err error) {
	rt.failedHC[id] = true
	var e *registry.Entry
	if s, ok := rt.snap.Load().slots[id]; ok {
		e = s.entry
	}
	msg := e.ShowError(err)
	rt.opts.Health.SetCheck("entry."+string(id), func() error { return fmt.Errorf("entry failed: %s", msg) })
}

func (rt *Runtime) clearFailedCheck(id registry.ID) {
	if rt.failedHC[id] {
		delete(rt.failedHC, id)
		rt.opts.Health.RemoveCheck("entry." + string(id))
	}
}

// stopEntries stops the entries ids of snap in the given order, each within
// StopTimeout; on the loop. snap need not be the published snapshot: a
// reload stops what the old configuration runs after it published the new.
func (rt *Runtime) stopEntries(snap *snapshot, ids []registry.ID) {
	for _, id := range ids {
		if s := snap.slots[id]; s != nil {
			rt.stopEntry(id, s)
		}
	}
}

// stopEntry stops the instance of slot s, the state of entry id.
func (rt *Runtime) stopEntry(id registry.ID, s *slot) {
	rt.unwait(id)
	cur := s.state.Load()
	if cur.Instance == nil || (cur.Status != StatusRunning && cur.Status != StatusStarting) {
		if cur.Status == StatusStarting {
			// Waiting for a restart: there is nothing to stop, and the
			// owner's pending restart will find it no longer current.
			s.set(EntryState{Status: StatusStopped, Err: cur.Err, Restarts: cur.Restarts})
		}
		return
	}
	s.set(EntryState{Status: StatusStopping, Instance: cur.Instance, Err: cur.Err, Restarts: cur.Restarts})
	err := rt.stopInstance(id, s.entry, cur.Instance)
	if err != nil {
		rt.log.Warn("entry did not stop cleanly", "entry", string(id), "error", s.entry.ShowError(err))
	} else {
		rt.log.Debug("entry stopped", "entry", string(id))
	}
	s.set(EntryState{Status: StatusStopped, Instance: cur.Instance, Restarts: cur.Restarts})
	rt.clearFailedCheck(id)
}

// stopInstance stops inst, entry e's, within e's stop_timeout; without
// one, a ShutdownTimer says how long it needs, else the runtime's default.
func (rt *Runtime) stopInstance(id registry.ID, e *registry.Entry, inst registry.Instance) (err error) {
	d := rt.env.StopTimeout(e)
	if st, ok := inst.(registry.ShutdownTimer); ok && e.Lifecycle.StopTimeout == 0 {
		d = st.ShutdownTimeout()
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if d > 0 {
		ctx, cancel = context.WithTimeout(ctx, d)
	}
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("stop %s panicked: %v", id, r)
		}
	}()
	if st, ok := inst.(registry.Stopper); ok {
		err = st.Stop(ctx)
		if ctx.Err() != nil {
			// The kind overran its deadline: make sure its process is gone.
			_ = rt.opts.Node.Kill(inst.PID())
		}
		return err
	}
	if _, err := rt.opts.Node.Stop(ctx, inst.PID()); err != nil && !errors.Is(err, process.ErrNoProcess) {
		return err
	}
	return nil
}

// Stop stops every running entry in reverse dependency order, each within
// StopTimeout, then ends the runtime: it cannot be started again. ctx
// bounds the whole shutdown.
func (rt *Runtime) Stop(ctx context.Context) error {
	// A start in progress on the loop (a slow reload) is abandoned now,
	// so that stopping does not wait for it.
	rt.haltOnce.Do(func() { close(rt.halt) })
	if rt.stopped.Load() {
		return nil
	}
	err := rt.do(ctx, func() {
		rt.stopAll()
		rt.stopped.Store(true)
	})
	rt.stopped.Store(true)
	rt.cancel()
	<-rt.loop.Done()
	rt.waitOrphans(ctx, rt.opts.StopTimeout)
	return err
}

// Entry implements registry.Lookup.
func (rt *Runtime) Entry(id registry.ID) (*registry.Entry, bool) {
	s, ok := rt.snap.Load().slots[id]
	if !ok {
		return nil, false
	}
	return s.entry, true
}

// Instance implements registry.Lookup: the running instance of id.
func (rt *Runtime) Instance(id registry.ID) (registry.Instance, bool) {
	s, ok := rt.snap.Load().slots[id]
	if !ok {
		return nil, false
	}
	st := s.state.Load()
	if st.Status != StatusRunning || st.Instance == nil {
		return nil, false
	}
	return st.Instance, true
}

// Spawn implements registry.Lookup: it instantiates a registry.Template entry.
func (rt *Runtime) Spawn(id registry.ID, opts registry.SpawnOptions) (process.PID, error) {
	s, ok := rt.snap.Load().slots[id]
	if !ok {
		return process.PID{}, fmt.Errorf("spawn %s: %w", id, registry.ErrNoEntry)
	}
	k, _ := rt.opts.Kinds.Kind(s.entry.Kind)
	t, ok := k.(registry.Template)
	if !ok {
		return process.PID{}, fmt.Errorf("spawn %s: %w: kind %s", id, ErrNotTemplate, s.entry.Kind)
	}
	pid, err := t.Spawn(rt.env, s.entry, opts)
	if err == nil && !opts.Managed {
		rt.spawned.add(rt.opts.Node, id, pid, s.entry.Digest)
	}
	return pid, err
}

// Info returns the entry id with its state.
func (rt *Runtime) Info(id registry.ID) (EntryInfo, bool) {
	snap := rt.snap.Load()
	s, ok := snap.slots[id]
	if !ok {
		return EntryInfo{}, false
	}
	return rt.info(s, rt.instanceOutdated(snap)), true
}

// info is s with its state; held counts the processes running instances
// keep on an older definition (OutdatedCounter), by definition.
func (rt *Runtime) info(s *slot, held map[registry.ID]int) EntryInfo {
	return EntryInfo{Entry: s.entry, EntryState: rt.observed(s),
		Outdated: rt.spawned.outdated(rt.opts.Node, s.entry.ID, s.entry.Digest) + held[s.entry.ID]}
}

// Entries returns every entry with its state, in dependency order.
func (rt *Runtime) Entries() []EntryInfo {
	snap := rt.snap.Load()
	out := make([]EntryInfo, 0, len(snap.cfg.Order))
	held := rt.instanceOutdated(snap)
	for _, id := range snap.cfg.Order {
		s := snap.slots[id]
		out = append(out, rt.info(s, held))
	}
	return out
}

// NotReady returns the auto_start entries that are neither running nor
// completed.
func (rt *Runtime) NotReady() []registry.ID {
	snap := rt.snap.Load()
	var out []registry.ID
	for _, id := range snap.cfg.Order {
		s := snap.slots[id]
		if !s.entry.Lifecycle.AutoStart {
			continue
		}
		if st := rt.observed(s).Status; st != StatusRunning && st != StatusCompleted {
			out = append(out, id)
		}
	}
	return out
}

// Exited is how the owner reports that inst, an instance of id, exited.
// The entry's restart type decides: when the exit calls for a restart the
// entry is marked starting again and Exited returns true (the owner
// restarts it after its backoff). Otherwise a normal return marks it
// completed, a requested shutdown stopped, and a failure (of a temporary
// entry) failed. When the runtime stopped or replaced inst itself, it
// returns ErrNotCurrent.
func (rt *Runtime) Exited(ctx context.Context, id registry.ID, inst process.PID, exit process.Exit) (restart bool, err error) {
	derr := rt.do(ctx, func() {
		s, cur, ok := rt.current(id, inst, StatusRunning)
		if !ok {
			err = ErrNotCurrent
			return
		}
		typ := s.entry.Lifecycle.Restart.Type
		if typ == "" {
			typ = registry.RestartPermanent
		}
		log := rt.log.With("entry", string(id), "restart", string(typ))
		next := EntryState{Instance: cur.Instance, Err: exit.Err, Restarts: cur.Restarts}
		if exit.Err != nil && !registry.ShutdownExit(exit) {
			rt.reports.settles.failed(id, s.entry, exit.Err)
		}
		switch {
		case typ.Restarts(exit):
			next.Status = StatusStarting
			restart = true
			switch {
			case exit.Err == nil:
				rt.failLogs.Log(rt.log, slog.LevelInfo, "entry", string(id), "entry returned; restarting it", "entry", string(id), "restart", string(typ))
			case registry.ShutdownExit(exit):
				// process.terminate of a permanent service: asked for, not
				// a failure (it was logged as one, error=shutdown).
				rt.failLogs.Log(rt.log, slog.LevelInfo, "entry", string(id), "entry stopped on request; restarting it", "entry", string(id), "restart", string(typ))
			case rt.failLogs.AllowLog(rt.log, slog.LevelWarn, "entry", string(id), "entry failed"):
				log.Warn("entry failed", "error", s.entry.ShowError(exit.Err))
			}
		case exit.Err == nil:
			next.Status = StatusCompleted
			log.Info("entry completed")
		case registry.ShutdownExit(exit):
			next.Status = StatusStopped
			log.Info("entry stopped on request; not restarting it")
		default:
			next.Status = StatusFailed
			rt.setFailedCheck(id, exit.Err)
			log.Error("entry failed; not restarting it", "error", s.entry.ShowError(exit.Err))
		}
		s.set(next)
		if !restart {
			rt.kick()
		}
	})
	if derr != nil {
		return false, derr
	}
	return restart, err
}

func (rt *Runtime) current(id registry.ID, pid process.PID, want Status) (*slot, *EntryState, bool) {
	s, ok := rt.snap.Load().slots[id]
	if !ok {
		return nil, nil, false
	}
	cur := s.state.Load()
	if cur.Status != want || cur.Instance == nil || cur.Instance.PID() != pid {
		return nil, nil, false
	}
	return s, cur, true
}

// Restart starts a new instance of id in place of old, which failed and
// was reported through Exited. It returns ErrNotCurrent when the runtime
// has since stopped, removed or replaced the entry. The owner's Watch is
// called before the instance is published, as for a first start: an
// instance that returns at once must be seen with its real exit, not as a
// process already gone by the time its owner got to monitor it.
func (rt *Runtime) Restart(ctx context.Context, id registry.ID, old process.PID) (registry.Instance, error) {
	var inst registry.Instance
	var err error
	derr := rt.do(ctx, func() {
		s, cur, ok := rt.current(id, old, StatusStarting)
		if !ok {
			err = ErrNotCurrent
			return
		}
		k, _ := rt.opts.Kinds.Kind(s.entry.Kind)
		st, isStarter := k.(registry.Starter)
		if !isStarter {
			err = fmt.Errorf("restart %s: %w", id, ErrNotStarter)
			return
		}
		var serr error
		inst, serr = rt.callStart(ctx, st, s.entry)
		if serr != nil {
			// Keep the old (dead) instance so the owner's next attempt
			// still names what it is replacing.
			s.set(EntryState{Status: StatusStarting, Instance: cur.Instance, Err: serr, Restarts: cur.Restarts + 1})
			err = fmt.Errorf("restart %s: %w", id, serr)
			return
		}
		rt.restarts.WithLabelValues(string(id)).Inc()
		s.set(EntryState{Status: StatusRunning, Instance: inst, Restarts: cur.Restarts + 1})
		rt.clearFailedCheck(id)
		rt.kick()
		rt.restartLogs.Log(rt.log, slog.LevelInfo, "entry", string(id), "entry restarted", "entry", string(id), "pid", inst.PID().String(), "restarts", cur.Restarts+1)
	})
	if derr != nil {
		return nil, derr
	}
	return inst, err
}

// Fail marks id failed: its owner gave up restarting old. Failed entries
// show in /v1/entries and as a failing health check.
func (rt *Runtime) Fail(ctx context.Context, id registry.ID, old process.PID, reason error) error {
	var err error
	derr := rt.do(ctx, func() {
		s, cur, ok := rt.current(id, old, StatusStarting)
		if !ok {
			err = ErrNotCurrent
			return
		}
		s.set(EntryState{Status: StatusFailed, Instance: cur.Instance, Err: reason, Restarts: cur.Restarts})
		rt.setFailedCheck(id, reason)
		rt.log.Error("entry failed for good; not restarting it", "entry", string(id), "error", s.entry.ShowError(reason), "restarts", cur.Restarts)
		rt.kick()
	})
	if derr != nil {
		return derr
	}
	return err
}
