package registry

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/process"
)

// Kind is implemented once per entry kind ("pg.scope", "router.pool", ...)
// and registered with a Registry. The registry knows kinds only through
// this interface and the optional ones below.
type Kind interface {
	// Name is the value of the entry's kind field.
	Name() string
	// Decode reads the kind-specific fields through d and returns the
	// entry's spec. Problems are reported with d.Errorf (all of them, not
	// just the first); fields the kind never asked d for are reported as
	// unknown after Decode returns. A spec must be immutable once returned.
	Decode(d *Decoder) any
}

// Declared is implemented by kinds that declare their fields (see Field)
// and read them through the declarations. The declarations are then the
// kind's whole story: a field its Decode reads without declaring it is an
// error, the upper bounds of its TypeInt fields are its bounds (see
// Bounded), and Schema describes the fields to editors.
type Declared interface {
	// Fields returns the fields at the root of an entry of the kind,
	// besides those every entry has (name, kind, meta, lifecycle).
	Fields() []*Field
}

// Starter is implemented by kinds whose entries run as services (anything
// with lifecycle.auto_start, and what they depend on).
type Starter interface {
	// Start brings e up and returns once it is running. The instance's
	// process stands for the entry: its exit is the entry's failure.
	Start(ctx context.Context, env *Env, e *Entry, opts StartOptions) (Instance, error)
}

// StartOptions configure one Start.
type StartOptions struct {
	// MonitorBy is the process that supervises the instance (the
	// runtime's root supervisor); zero: none. Start spawns the instance's
	// process with process.SpawnOptions.MonitorBy set to it, as OTP's
	// supervisor links at the spawn: an instance may end the moment its
	// start returns (a script's, a supervisor's whose children keep
	// failing, a route's whose server went), and only a monitor in place
	// from the spawn sees that exit with its reason. A start that fails
	// after the spawn drops the monitor before its process exits
	// (process.Node.Demonitor), as every shipped kind's does, and so does
	// the runtime for a start it abandons: the EXIT of an instance the
	// root is never given is only forgotten past a bound
	// (kinds/supervisor's earlyExits). A kind
	// that ignores MonitorBy is monitored late, with an error logged, and
	// an exit before that is reported without its reason.
	MonitorBy process.PID
}

// Instance is a running entry.
type Instance interface {
	// PID is the process whose exit means the entry stopped.
	PID() process.PID
}

// Stopper is implemented by instances that stop in their own way. Without
// it the registry terminates the instance's PID and, past the deadline of
// ctx, kills it.
type Stopper interface {
	Stop(ctx context.Context) error
}

// ShutdownTimer is implemented by instances that may need another stop
// deadline than the runtime's StopTimeout: a supervisor stops its children
// one by one, each within its own shutdown deadline. Zero means no limit
// (OTP's infinity); a second signal to the runner still forces exit.
type ShutdownTimer interface {
	ShutdownTimeout() time.Duration
}

// Updater is implemented by instances that can apply a changed spec in
// place. Update returns false when the change needs a restart, and the
// registry then stops and starts the entry.
type Updater interface {
	Update(ctx context.Context, e *Entry) (applied bool, err error)
}

// Refresher is implemented by instances that run instances of other
// entries (a supervisor's children, a pool's routees) and know which
// definition — entry ID and digest — each one runs. After a reload that
// changed a definition the runtime calls Refresh on every running one it
// knows of (entries' instances, and those in Env.Instances: trees nested
// in a supervisor or started by a script), and Refresh restarts, through
// the instance's own machinery, what runs a definition that is no longer
// the one in force. It must be cheap when nothing changed.
type Refresher interface {
	Refresh(ctx context.Context) error
}

// Template is implemented by kinds whose entries are definitions that
// others instantiate: a pool spawns its routees, a supervisor its
// children, process.spawn a process.lua entry. Spawn honours
// opts.LinkTo and opts.MonitorBy from the instance's start (a pool and a
// supervisor link and monitor nothing again).
type Template interface {
	Spawn(env *Env, e *Entry, opts SpawnOptions) (process.PID, error)
}

// SpawnOptions configure one instance of a Template.
type SpawnOptions struct {
	process.SpawnOptions
	// Args are passed to the instance (a Lua process's method arguments).
	// nil means the entry's own args.
	Args []any
	// Upgradable says that the caller may ask for the instance to be
	// upgraded in place when a reload changes its entry (on_reload:
	// upgrade, see Upgrader).
	Upgradable bool
	// Managed says that the caller restarts the instance when a reload
	// changes its entry (a supervisor, a pool: see Refresher). An
	// unmanaged instance, such as a process a script spawned, keeps
	// running the code it started with and is counted as outdated until
	// it exits.
	Managed bool
}

// Env is what kinds get from the runtime: the node, logging, metrics, health
// checks, and access to other entries. It is shared by every entry.
type Env struct {
	Node    *process.Node
	Logger  *slog.Logger
	Metrics *prometheus.Registry
	Health  HealthRegistry
	// Entries resolves entry IDs against the configuration in force (after
	// a reload, the new one).
	Entries Lookup
	// Instances holds the running instances that may be referred to by
	// PID (see Find). Nil: none can be.
	Instances *Directory
	// Cluster is what the node's cluster layer offers the kinds that span
	// nodes, as whoever assembled the node made it; nil on a node alone.
	// The registry imports no cluster package: a kind asserts the
	// interface it uses (pg.scope: pgscope.Distributor, which package
	// node sets to the cluster's pg distribution).
	Cluster any

	// StartDefault and StopDefault are the runtime's lifecycle timeouts
	// for entries that set none; zero: DefaultStartTimeout,
	// DefaultStopTimeout.
	StartDefault, StopDefault time.Duration
	// Reports hears what kinds tell the runtime about reloads
	// (RenewalFailed, Crashed); nil outside a runtime.
	Reports Reporter
}

// Reporter is what a runtime hears from kinds about a reload: the
// renewals whose new code did not start, and the definitions whose
// processes fail soon after (see Env.RenewalFailed and Env.Crashed).
// Both are called from any goroutine.
type Reporter interface {
	RenewalFailed(by process.PID, slot string, def ID, err error)
	Crashed(def ID, err error)
}

// Default lifecycle timeouts, for entries that set none and runtimes whose
// options name none.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultStopTimeout  = 5 * time.Second
)

// StartTimeout is how long e has to start: its lifecycle.start_timeout, or
// the runtime's default.
func (env *Env) StartTimeout(e *Entry) time.Duration {
	if e != nil && e.Lifecycle.StartTimeout > 0 {
		return e.Lifecycle.StartTimeout
	}
	if env != nil && env.StartDefault > 0 {
		return env.StartDefault
	}
	return DefaultStartTimeout
}

// StopTimeout is how long e has to stop gracefully before it is killed:
// its lifecycle.stop_timeout, or the runtime's default.
func (env *Env) StopTimeout(e *Entry) time.Duration {
	if e != nil && e.Lifecycle.StopTimeout > 0 {
		return e.Lifecycle.StopTimeout
	}
	if env != nil && env.StopDefault > 0 {
		return env.StopDefault
	}
	return DefaultStopTimeout
}

// HealthRegistry holds named health checks for /healthz.
type HealthRegistry interface {
	// SetCheck registers or replaces a check; a nil error is healthy.
	SetCheck(name string, check func() error)
	RemoveCheck(name string)
}

// Lookup gives access to other entries.
type Lookup interface {
	// Entry returns the entry with id in the configuration in force.
	Entry(id ID) (*Entry, bool)
	// Instance returns the running instance of id, if it runs.
	Instance(id ID) (Instance, bool)
	// Spawn instantiates a Template entry.
	Spawn(id ID, opts SpawnOptions) (process.PID, error)
}

// EntryLogger returns env's logger tagged with the entry ID, the way every
// log line of an entry must be.
func (env *Env) EntryLogger(id ID) *slog.Logger {
	return env.Logger.With("entry", string(id))
}

// Viewer is implemented by instances that expose their state as JSON under
// /v1 (GET /v1/entries/{id}, and the per-kind views: pg groups, pools,
// supervision trees). View must read a snapshot, never wait on a loop.
type Viewer interface {
	View() any
}

// ViewPage selects part of a view that can be large (a pg scope's members):
// GET /v1 reads it from the query. Zero fields take their defaults.
type ViewPage struct {
	// Group shows only the group of this name; "" shows every group.
	Group string
	// GroupOffset and GroupLimit select groups, sorted by name.
	// Default limit: DefaultViewLimit.
	GroupOffset, GroupLimit int
	// Offset and Limit select the members of each group shown. Default
	// limit: DefaultViewLimit.
	Offset, Limit int
}

// Bounds of a ViewPage. A page is for reading: 1,000 groups, or 1,000
// members of each, is already more than a person reads, and a client that
// wants everything pages through with the offsets. (100,000 of each let 40
// concurrent requests take the node from 0.3 to 4 GB.)
const (
	DefaultViewLimit = 1000
	MaxViewLimit     = 1000
	// MaxViewMembers bounds the members one page shows over all its
	// groups: past it, the groups left get no members (and say
	// "truncated").
	MaxViewMembers = 100_000
)

// WithDefaults returns p with its zero limits at DefaultViewLimit and
// every limit at most MaxViewLimit.
func (p ViewPage) WithDefaults() ViewPage {
	fix := func(n int) int {
		switch {
		case n <= 0:
			return DefaultViewLimit
		case n > MaxViewLimit:
			return MaxViewLimit
		}
		return n
	}
	p.GroupLimit, p.Limit = fix(p.GroupLimit), fix(p.Limit)
	p.GroupOffset, p.Offset = max(p.GroupOffset, 0), max(p.Offset, 0)
	return p
}

// PagedViewer is implemented by instances whose view can be too large to
// answer with at once. View must return the default page
// (ViewPage{}.WithDefaults()); views cut short say so with "truncated".
type PagedViewer interface {
	Viewer
	ViewPage(p ViewPage) any
}

// RenewalFailed reports, from the instance by, that renewing slot (a
// pool's slot, a supervisor's child ID) on definition def failed with
// err: the process there still runs the old code, or none. Kinds call it
// from a reload's Update or Refresh; reports outside a reload are ignored
// (a crash restarted later is no renewal). It is safe from any goroutine,
// and a no-op on an Env without a runtime.
func (env *Env) RenewalFailed(by process.PID, slot string, def ID, err error) {
	if env == nil || env.Reports == nil {
		return
	}
	env.Reports.RenewalFailed(by, slot, def, err)
}

// OutdatedCounter is implemented by instances that run instances of
// other entries and may leave some on an older definition than the one
// in force: a pool whose routee renewal failed keeps the old routee in
// its slot. The runtime adds the counts to the entries' outdated
// processes (/v1/entries, runner_outdated_processes). CountOutdated
// calls add for each definition with processes on an older one; it must
// be safe from any goroutine (read a published snapshot).
type OutdatedCounter interface {
	CountOutdated(add func(def ID, n int))
}

// Crashed reports, from a kind, that a process it runs on definition def
// (a pool's routee, a supervisor's child) failed with err: when the last
// reload changed def and it happened within ReloadSettleWindow, the
// reload counts it as crashed (its status is degraded). Safe from any
// goroutine; a no-op on an Env without a runtime.
func (env *Env) Crashed(def ID, err error) {
	if env == nil || env.Reports == nil {
		return
	}
	env.Reports.Crashed(def, err)
}
