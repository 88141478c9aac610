package lua

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/suggest"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// KindName is the kind of Lua process entries.
const KindName = "process.lua"

// Options configure the process.lua kind. The zero value is usable.
type Options struct {
	// Stdout receives what scripts print. Default: os.Stdout.
	Stdout io.Writer
	// MaxStringSize is the longest string, in bytes, that a script may
	// build: the .. operator and every string-producing builtin raise
	// rather than make a longer one. Default: DefaultMaxStringSize.
	MaxStringSize int
	// MaxTableEntries is the most entries one table may hold: an
	// assignment, rawset or table.insert that would add one more raises.
	// Default: DefaultMaxTableEntries.
	MaxTableEntries int
	// MaxCallDepth is how deeply a script's calls may nest (Lua functions
	// and builtins; a tail call adds none): one call more raises "stack
	// overflow", an error the script can catch. The call stack and the
	// data stack grow on demand, so an idle process does not pay for the
	// depth it may reach. Default: DefaultMaxCallDepth.
	MaxCallDepth int
	// MaxTimers bounds a process's pending time.after timers: one more
	// returns nil, limit. Default: DefaultMaxTimers.
	MaxTimers int
	// MaxListens bounds the topics a process listens to: process.listen
	// of one more returns nil, limit. Default: DefaultMaxListens.
	MaxListens int
	// ProcessLimits bound the links, monitors and names a script's
	// process holds and the events it leaves unread (see process.Limits).
	// Each field zero or less takes its DefaultProcessLimits value.
	ProcessLimits process.Limits
	// Modules are the runtime modules scripts may require, besides json and errors,
	// which every host has. Default: none. cmd/runner gives pg, router and
	// supervisor (lua/modules/*); an embedder gives what its scripts need.
	// A module whose declaration Module.Check rejects, or one named twice
	// (json and errors included), makes NewKind panic: a mistake in the program, found
	// when it starts.
	Modules []Module
	// CrashReports limits the crash reports logged per entry: at most
	// Burst in each Window, the rest counted and their number logged when
	// the window ends. Defaults: DefaultCrashBurst in DefaultCrashWindow.
	CrashReports CrashReportLimit
}

// Host is the process.lua kind: it decodes entries, and spawns and starts
// their processes. It implements registry.Kind, registry.Template and
// registry.Starter.
type Host struct {
	stdout io.Writer
	outMu  sync.Mutex // one print is one write, whole lines never interleave
	limits limits
	// metrics is the registry the abandon counts were last exported on.
	metrics atomic.Pointer[prometheus.Registry]

	globals    map[string]*library // process, channel, time, log
	modules    map[string]*library // what require finds, by name
	moduleList []Module            // the same, sorted by name

	crashes crashLog

	// upgradable holds the live processes that may be upgraded in place
	// (on_reload: upgrade), by PID (upgrade.go).
	upgradable sync.Map
}

// NewKind returns the process.lua kind, for a registry of kinds
// (cmd/runner's, or an embedder's: see docs/lua/embedding.md).
func NewKind(opts Options) *Host {
	h := &Host{
		stdout:  opts.Stdout,
		limits:  newLimits(opts),
		globals: globalLibraries(),
	}
	h.modules, h.moduleList = loadModules(opts.Modules)
	if h.stdout == nil {
		h.stdout = os.Stdout
	}
	h.crashes.limit = opts.CrashReports.withDefaults()
	return h
}

var (
	_ registry.Kind     = (*Host)(nil)
	_ registry.Template = (*Host)(nil)
	_ registry.Starter  = (*Host)(nil)
)

// Spec is a decoded process.lua entry. It is immutable: its compiled
// sources are shared by every process of the entry.
type Spec struct {
	Source      *registry.Source
	Method      string
	Args        []any
	MailboxSize int
	// OnReload is what a reload that changes the entry does to its
	// processes: ReloadRestart (default), ReloadKeep or ReloadUpgrade.
	OnReload string
	// UpgradeTimeout bounds the wait for process.upgrade (on_reload:
	// upgrade); zero is DefaultUpgradeTimeout.
	UpgradeTimeout time.Duration
	// Modules are the entry's own modules, by the name require uses.
	Modules map[string]*registry.Source

	main    *Compiled
	modules map[string]*Compiled
}

// Name implements registry.Kind.
func (h *Host) Name() string { return KindName }

// MaxMailboxSize bounds mailbox_size (runner --limit
// process.lua.mailbox_size=N overrides it).
const MaxMailboxSize = 1_000_000

var moduleNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// The fields of a process.lua entry.
var (
	fSource = registry.SourceField("source", "The Lua script, file://PATH relative to this file.").
		Require("required (file://PATH of the Lua script)")
	fMethod = registry.StringField("method", "main",
		"The function the process runs: a field of the table the script returns, or a global function.")
	fArgs        = registry.ListField("args", "Arguments method gets when the entry runs as a service.")
	fMailboxSize = registry.IntField("mailbox_size", 0, MaxMailboxSize,
		"0 is unbounded; above 0, a send to a full mailbox is an error the sender sees.").AtLeast(0, "unbounded")
	fModules  = registry.SourcesField("modules", "The entry's own modules for require: name: file://PATH.")
	fOnReload = registry.EnumField("on_reload", ReloadRestart, []string{ReloadRestart, ReloadKeep, ReloadUpgrade},
		"What a reload that changes the entry does to its running processes: restart them on the new code, keep them on the old, or upgrade them in place (same PID and mailbox, state handed over by process.upgrade).")
	fUpgradeTimeout = registry.DurationField("upgrade_timeout", DefaultUpgradeTimeout,
		"on_reload: upgrade only: a process that has not called process.upgrade this long after the UPGRADE event is restarted on the new code.").Positive().AtMost(MaxUpgradeTimeout)

	kindFields = []*registry.Field{fSource, fMethod, fArgs, fMailboxSize, fModules, fOnReload, fUpgradeTimeout}
)

var _ registry.Declared = (*Host)(nil)

// Fields implements registry.Declared.
func (h *Host) Fields() []*registry.Field { return kindFields }

// Decode implements registry.Kind.
func (h *Host) Decode(d *registry.Decoder) any {
	s := &Spec{
		Source:      fSource.Source(d),
		Method:      fMethod.Str(d),
		Args:        fArgs.Values(d),
		MailboxSize: fMailboxSize.Int(d),
		OnReload:    fOnReload.EnumValue(d),
	}
	s.UpgradeTimeout = fUpgradeTimeout.Duration(d)
	if d.Has(fUpgradeTimeout.Name) && s.OnReload != ReloadUpgrade {
		d.Errorf(fUpgradeTimeout.Name, "applies only with on_reload: upgrade (on_reload is %s)", s.OnReload)
	}
	if s.Method == "" {
		d.Errorf(fMethod.Name, "must not be empty")
	}
	if s.MailboxSize < 0 {
		s.MailboxSize = 0
	}
	if v, ok := d.Value(fModules.Name); ok && v != nil {
		m, isMap := v.(map[string]any)
		md := d.Object(fModules.Name)
		if !isMap || md == nil {
			d.Errorf(fModules.Name, "must be a mapping of module name to file://PATH")
		} else {
			names := make([]string, 0, len(m))
			for name := range m {
				names = append(names, name)
			}
			sort.Strings(names)
			s.Modules = map[string]*registry.Source{}
			s.modules = map[string]*Compiled{}
			for _, name := range names {
				if !moduleNameRE.MatchString(name) {
					md.Errorf(name, "invalid module name %q (letters, digits, _ and dots)", name)
					continue
				}
				if _, runtime := h.modules[name]; runtime {
					md.Errorf(name, "module %q is a runtime module and cannot be replaced", name)
					continue
				}
				src := md.Source(name)
				if src == nil {
					continue
				}
				c, err := compileSource(src)
				if err != nil {
					md.Errorf(name, "syntax error: %v", err)
					continue
				}
				s.Modules[name] = src
				s.modules[name] = c
			}
		}
	}
	if s.Source != nil {
		c, err := compileSource(s.Source)
		if err != nil {
			d.Errorf(fSource.Name, "syntax error: %v", err)
		} else {
			s.main = c
			if has, known := c.HasMethod(s.Method); known && !has {
				field := fMethod.Name
				if !d.Has(fMethod.Name) {
					field = fSource.Name
				}
				if near := suggest.Closest(s.Method, c.Methods()); near != "" {
					d.Errorf(field, "%s defines no function %q (did you mean %q?)", c.Name, s.Method, near)
				} else {
					d.Errorf(field, "%s defines no function %q (return a table with it, or define a global function)", c.Name, s.Method)
				}
			}
		}
	}
	return s
}

// compileSource compiles src once per version of its file, however many
// entries name it: the compiled proto is read-only and shared.
func compileSource(src *registry.Source) (*Compiled, error) {
	c, err := src.Memo("lua.compile", func() (any, error) { return Compile(displayPath(src.Path), src.Bytes) })
	if err != nil {
		return nil, err
	}
	return c.(*Compiled), nil
}

// Spawn implements registry.Template: one process per call, running the
// entry's method with opts.Args (the entry's args when nil). When the
// script defines init, Spawn returns once init has returned, or with the
// error that failed the start (see start.go).
func (h *Host) Spawn(env *registry.Env, e *registry.Entry, opts registry.SpawnOptions) (process.PID, error) {
	spec, ok := e.Spec.(*Spec)
	if !ok || spec.main == nil {
		return process.PID{}, fmt.Errorf("spawn %s: not a valid process.lua entry", e.ID)
	}
	h.registerMetrics(env)
	args := opts.Args
	if args == nil {
		args = spec.Args
	}
	so := opts.SpawnOptions
	so.Limits = h.limits.proc
	if so.MailboxSize == 0 {
		so.MailboxSize = spec.MailboxSize
	}
	var st *starting
	if spec.mayInit() {
		st = &starting{ready: make(chan error, 1), linkTo: so.LinkTo, monitorBy: so.MonitorBy}
	}
	var up *upgradeSlot
	if upgradable(spec, opts) {
		up = &upgradeSlot{id: e.ID, spawned: !opts.Managed, asked: opts.Upgradable}
		up.digest.Store(&e.Digest)
	}
	pid, err := env.Node.SpawnFunc(h.body(env, e, spec, args, st, up), so)
	if err != nil {
		return process.PID{}, fmt.Errorf("spawn %s: %w", e.ID, err)
	}
	if up != nil {
		h.addUpgradable(pid, up)
	}
	if st != nil {
		if err := h.awaitStart(env, e, pid, st); err != nil {
			return process.PID{}, err
		}
	}
	return pid, nil
}

// instance is a process.lua entry running as a service.
type instance struct {
	pid process.PID
	env *registry.Env
	id  registry.ID
	// digest is the definition the process runs: a kept one (on_reload:
	// keep) is outdated.
	digest atomic.Pointer[string]
}

func (i *instance) PID() process.PID { return i.pid }

var (
	_ registry.Updater         = (*instance)(nil)
	_ registry.OutdatedCounter = (*instance)(nil)
)

// Update implements registry.Updater: a changed entry that says on_reload:
// keep keeps its process on the old code; upgrade offers it the new code
// (see upgrade.go) and keeps it when it upgraded, or when the new code
// failed (the process crashed: the root supervisor restarts it on the new
// code, with its backoff); restart, a timeout, or a process that is not
// upgradable restart the entry.
func (i *instance) Update(ctx context.Context, e *registry.Entry) (bool, error) {
	spec, ok := e.Spec.(*Spec)
	if !ok {
		return false, nil
	}
	switch spec.OnReload {
	case ReloadKeep:
		return true, nil
	case ReloadUpgrade:
		up, ok := i.env.Entries.(registry.UpgradeLookup)
		if !ok {
			return false, nil
		}
		res, err := up.Upgrade(ctx, i.pid, e.ID)
		switch res {
		case registry.UpgradeOK:
			i.digest.Store(&e.Digest)
			i.env.EntryLogger(e.ID).Info("upgraded in place", "pid", i.pid.String(), "version", e.Digest)
			return true, nil
		case registry.UpgradeFailed:
			i.digest.Store(&e.Digest)
			i.env.EntryLogger(e.ID).Warn("upgrade failed: the new code raised; the process crashed and restarts on the new code", "pid", i.pid.String(), "error", e.ShowError(err))
			return true, nil
		case registry.UpgradeTimeout:
			i.env.EntryLogger(e.ID).Warn("no upgrade within the upgrade timeout; restarting on the new code", "pid", i.pid.String(), "error", e.ShowError(err))
		}
	}
	return false, nil
}

// CountOutdated implements registry.OutdatedCounter: a process kept on
// its old code (on_reload: keep).
func (i *instance) CountOutdated(add func(def registry.ID, n int)) {
	if i.env == nil || i.env.Entries == nil {
		return
	}
	e, ok := i.env.Entries.Entry(i.id)
	if d := i.digest.Load(); ok && d != nil && *d != e.Digest && i.env.Node.Alive(i.pid) {
		add(i.id, 1)
	}
}

// Start implements registry.Starter: one instance, registered under the
// entry's ID so process.send("app:worker", ...) reaches it, and
// monitored by opts.MonitorBy from its spawn: a script may fail the
// moment its start returns.
func (h *Host) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	// Managed: the instance offers its process the new code (Update).
	pid, err := h.Spawn(env, e, registry.SpawnOptions{SpawnOptions: process.SpawnOptions{Name: string(e.ID), MonitorBy: opts.MonitorBy}, Managed: true})
	if err != nil {
		return nil, err
	}
	i := &instance{pid: pid, env: env, id: e.ID}
	i.digest.Store(&e.Digest)
	return i, nil
}
