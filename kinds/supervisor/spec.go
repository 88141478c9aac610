package supervisor

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/proctor-run/proctor/internal/problems"
	"github.com/proctor-run/proctor/registry"
)

// Kind names.
const (
	KindStatic    = "supervisor"
	KindDynamic   = "supervisor.dynamic"
	KindPartition = "supervisor.partition"
)

// Strategy decides which children restart when one fails.
type Strategy string

const (
	// OneForOne restarts only the child that failed.
	OneForOne Strategy = "one_for_one"
	// AllForOne stops every other child (reverse order) and restarts all.
	AllForOne Strategy = "all_for_one"
	// RestForOne stops the children started after the failed one (reverse
	// order) and restarts the failed one and those, in order.
	RestForOne Strategy = "rest_for_one"
)

// RestartType says when a child is restarted: the registry's, which the
// root supervisor applies to entries too.
type RestartType = registry.RestartType

const (
	// Permanent children are always restarted.
	Permanent = registry.RestartPermanent
	// Transient children are restarted only after an abnormal exit (an exit
	// that is neither normal nor a shutdown).
	Transient = registry.RestartTransient
	// Temporary children are never restarted; their spec is dropped when
	// they exit, and they are not restarted as bystanders either.
	Temporary = registry.RestartTemporary
)

// ReloadAction is what a reload does to a running child whose definition
// (its process entry's fields or code) changed.
type ReloadAction string

const (
	// ReloadRestart restarts the child on the new definition through the
	// supervisor's own machinery: its strategy and shutdown apply, the
	// restart intensity does not (a reload is no failure).
	ReloadRestart ReloadAction = "restart"
	// ReloadKeep leaves the child on the code it started with until it
	// exits for another reason; it counts as outdated meanwhile.
	ReloadKeep ReloadAction = "keep"
	// ReloadUpgrade offers the child the new definition in place (same
	// PID and mailbox, its state handed over: docs/reload.md#hot-upgrade);
	// a child that does not upgrade within its entry's upgrade_timeout,
	// or whose kind cannot, is restarted as with ReloadRestart.
	ReloadUpgrade ReloadAction = "upgrade"
)

// FailureAction is what the supervisor does when a child exits in a way its
// restart type calls for a restart.
type FailureAction string

const (
	// ActionRestart applies the strategy; it counts toward the intensity.
	ActionRestart FailureAction = "restart"
	// ActionStop leaves the failed child stopped (its spec is kept, status
	// "terminated"); its siblings are untouched.
	ActionStop FailureAction = "stop"
	// ActionEscalate stops every child in reverse order and fails the
	// supervisor at once, so its parent's strategy applies.
	ActionEscalate FailureAction = "escalate"
	// ActionResume restarts the failed child alone, whatever the strategy:
	// the rest of the tree carries on as if nothing happened. It counts
	// toward the intensity like a restart, so a crash loop still escalates.
	ActionResume FailureAction = "resume"
)

// ChildType tells supervisors from workers.
type ChildType string

const (
	Worker         ChildType = "worker"
	SupervisorType ChildType = "supervisor"
)

// Special shutdown values of ChildSpec.Shutdown.
const (
	// BrutalKill kills the child at once instead of asking it to stop.
	BrutalKill time.Duration = -1
	// Infinity waits for the child however long it takes (the default for
	// a child that is itself a supervisor, which needs the time to stop its
	// own children).
	Infinity time.Duration = math.MaxInt64
)

// DefaultShutdown is the graceful stop deadline of a worker child.
const DefaultShutdown = 5 * time.Second

// Defaults of the supervisor fields.
const (
	DefaultMaxRestarts   = 3
	DefaultRestartWindow = 5 * time.Second
)

// ChildSpec describes one child.
type ChildSpec struct {
	// ID names the child within its supervisor.
	ID string
	// Process is the template entry instantiated for the child: a
	// process.lua entry or another supervisor entry.
	Process registry.ID
	// Restart defaults to Permanent.
	Restart RestartType
	// Args are passed to the child; nil means the entry's own args.
	Args []any
	// Shutdown is the graceful stop deadline: 0 means the default
	// (DefaultShutdown for a worker, Infinity for a supervisor); BrutalKill
	// kills at once.
	Shutdown time.Duration
	// OnFailure defaults to ActionRestart.
	OnFailure FailureAction
	// OnReload empty follows the child's entry: a process.lua entry that
	// says on_reload: upgrade upgrades it, any other restarts it
	// (ReloadRestart). Set, it wins over the entry's.
	OnReload ReloadAction
	// Name, when set, is registered for the child's process before it
	// runs (before its init), and again for each restart: a name another
	// process holds fails the start. Names with ':' are the entries'.
	Name string
}

func (c ChildSpec) withDefaults() ChildSpec {
	if c.Restart == "" {
		c.Restart = Permanent
	}
	if c.OnFailure == "" {
		c.OnFailure = ActionRestart
	}
	return c
}

// shutdownFor resolves the shutdown of a child of type t whose entry's
// lifecycle.stop_timeout is entryStop (0: none): its own shutdown, else
// its entry's stop_timeout, else the default of its type.
func (c ChildSpec) shutdownFor(t ChildType, entryStop time.Duration) time.Duration {
	switch {
	case c.Shutdown != 0:
		return c.Shutdown
	case entryStop > 0:
		return entryStop
	case t == SupervisorType:
		return Infinity
	}
	return DefaultShutdown
}

// equal reports whether o is c as far as the running child is concerned:
// on_reload aside, which a reload changes in place.
func (c ChildSpec) equal(o ChildSpec) bool {
	if c.ID != o.ID || c.Process != o.Process || c.Restart != o.Restart || c.Shutdown != o.Shutdown || c.OnFailure != o.OnFailure || c.Name != o.Name {
		return false
	}
	if (c.Args == nil) != (o.Args == nil) || len(c.Args) != len(o.Args) {
		return false
	}
	return fmt.Sprint(c.Args) == fmt.Sprint(o.Args)
}

// Spec is the decoded entry of any of the three kinds. It is immutable once
// decoded; a Go embedder may build one directly.
type Spec struct {
	// Kind is KindStatic, KindDynamic or KindPartition.
	Kind string
	// Strategy defaults to OneForOne (the only one dynamic and partition
	// supervisors accept).
	Strategy Strategy
	// MaxRestarts restarts are allowed within RestartWindow; one more
	// escalates. Zero is a real value here (no restart allowed, as OTP's
	// intensity 0); the YAML default, DefaultMaxRestarts, is set by Decode.
	MaxRestarts int
	// RestartWindow defaults to DefaultRestartWindow.
	RestartWindow time.Duration
	// Children start in this order and stop in the reverse.
	Children []ChildSpec
	// MaxChildren limits a dynamic supervisor's children; 0 = unlimited.
	MaxChildren int
	// Partitions is a partition supervisor's worker count; 0 means
	// runtime.NumCPU().
	Partitions int
	// Worker is a partition supervisor's template for its workers (its ID
	// is ignored: workers are named "0", "1", …).
	Worker ChildSpec

	checked bool // decodeSpec validated it; see check
}

func (s *Spec) withDefaults() *Spec {
	c := *s
	if c.Kind == "" {
		c.Kind = KindStatic
	}
	if c.Strategy == "" {
		c.Strategy = OneForOne
	}
	if c.RestartWindow == 0 {
		c.RestartWindow = DefaultRestartWindow
	}
	if c.Kind == KindPartition {
		if c.Partitions <= 0 {
			c.Partitions = runtime.NumCPU()
		}
		c.Children = make([]ChildSpec, c.Partitions)
		for i := range c.Children {
			w := c.Worker
			w.ID = fmt.Sprint(i)
			c.Children[i] = w.withDefaults()
		}
	} else {
		kids := make([]ChildSpec, len(c.Children))
		for i, k := range c.Children {
			kids[i] = k.withDefaults()
		}
		c.Children = kids
	}
	return &c
}

// check returns what is wrong with a Spec built in Go (decodeSpec
// validated a decoded one already), each problem matching ErrInvalidSpec
// and a child's ErrInvalidChild too.
func (s *Spec) check() error {
	if s.checked {
		return nil
	}
	l := problems.New(ErrInvalidSpec)
	s.withDefaults().validate(l, func(i int) *problems.List {
		if s.Kind == KindPartition {
			return l.Sub("", ErrInvalidChild) // the worker's fields sit among the supervisor's
		}
		return l.Sub(fmt.Sprintf("%s[%d].", fChildren.Name, i), ErrInvalidChild)
	})
	return l.Err()
}

// validate is the one set of rules of a supervisor's values (its defaults
// applied), for a decoded Spec and one built in Go alike: a Spec built in
// Go cannot run a dynamic supervisor all_for_one or a child with an
// unknown restart type. p receives the problems of the supervisor's own
// fields, child(i) those of child i (a partition's worker: child(0)).
func (s *Spec) validate(p *problems.List, child func(i int) *problems.List) {
	switch s.Kind {
	case KindStatic:
		p.Check(fStrategy, string(s.Strategy))
	case KindDynamic, KindPartition:
		if s.Strategy != OneForOne {
			p.Errorf(fStrategy.Name, "a %s supports one_for_one only, not %q", s.Kind, s.Strategy)
		}
	default:
		p.Errorf("kind", "%q is not %s, %s or %s", s.Kind, KindStatic, KindDynamic, KindPartition)
	}
	p.Check(fMaxRestarts, s.MaxRestarts)
	p.Check(fRestartWindow, s.RestartWindow)
	switch s.Kind {
	case KindPartition:
		p.Check(fPartitions, s.Partitions)
		w := s.Worker
		w.ID = "0" // workers are named by their partition
		w.withDefaults().validate(child(0))
		return
	case KindDynamic:
		if s.MaxChildren < 0 {
			p.Check(fMaxChildren, s.MaxChildren)
		} else if s.MaxChildren > 0 && len(s.Children) > s.MaxChildren {
			p.Errorf(fChildren.Name, "%d children exceed max_children %d", len(s.Children), s.MaxChildren)
		}
	}
	seen := map[string]bool{}
	for i, c := range s.Children {
		cp := child(i)
		c.withDefaults().validate(cp)
		if c.ID != "" {
			if seen[c.ID] {
				cp.Errorf(fChildID.Name, "duplicate child id %q", c.ID)
			}
			seen[c.ID] = true
		}
	}
}

// validate checks a child's values (its defaults applied); see
// Spec.validate.
func (c ChildSpec) validate(p *problems.List) {
	if c.ID == "" {
		p.Errorf(fChildID.Name, "is required")
	}
	if c.Process == "" {
		p.Errorf(fChildProcess.Name, "is required")
	}
	if c.Name != "" {
		if err := checkChildName(c.Name); err != nil {
			p.Errorf(fChildName.Name, "%v", err)
		}
	}
	p.Check(fChildRestart, string(c.Restart))
	p.Check(fChildOnFailure, string(c.OnFailure))
	// Absent: the child follows its entry's on_reload.
	if c.OnReload != "" {
		p.Check(fChildOnReload, string(c.OnReload))
	}
	if c.Shutdown < 0 && c.Shutdown != BrutalKill {
		p.Errorf(fChildShutdown.Name, "must be a positive duration, \"brutal_kill\" or \"infinity\", got %s", c.Shutdown)
	}
}

// validateChild checks a child spec given at run time (StartChild).
func validateChild(c ChildSpec) error {
	l := problems.New(ErrInvalidChild)
	c.withDefaults().validate(l)
	return l.Err()
}

// Upper bounds of a supervisor's counts, checked when the entry is
// validated (runner --limit KIND.FIELD=N overrides them).
const (
	// MaxRestartsLimit bounds max_restarts: the supervisor remembers that
	// many restarts.
	MaxRestartsLimit = 100_000
	// MaxPartitions bounds a partition supervisor's partitions: each is a
	// worker process, started at once.
	MaxPartitions = 1024
	// MaxChildrenLimit bounds a dynamic supervisor's max_children.
	MaxChildrenLimit = 1_000_000
)

var childKinds = []string{"process.lua", KindStatic, KindDynamic, KindPartition}

var (
	strategies    = []string{string(OneForOne), string(AllForOne), string(RestForOne)}
	restartTypes  = registry.RestartTypes
	failureActs   = []string{string(ActionRestart), string(ActionStop), string(ActionEscalate), string(ActionResume)}
	reloadActions = []string{string(ReloadRestart), string(ReloadKeep), string(ReloadUpgrade)}
)

// The fields of the three kinds, and of a child.
var (
	fStrategy = registry.EnumField("strategy", string(OneForOne), strategies,
		"Which children restart when one fails: it alone, all, or it and those started after it.")
	fOneForOne = registry.EnumField("strategy", string(OneForOne), strategies[:1],
		"Only one_for_one: the child that failed restarts alone.")
	fMaxRestarts = registry.IntField("max_restarts", DefaultMaxRestarts, MaxRestartsLimit,
		"Restarts allowed within restart_window; one more escalates to the supervisor's own supervisor.").AtLeast(0, "")
	fRestartWindow = registry.DurationField("restart_window", DefaultRestartWindow, "The window max_restarts counts in.").Positive()
	fMaxChildren   = registry.IntField("max_children", 0, MaxChildrenLimit, "The most children at once; 0 is unlimited.").
			AtLeast(0, "unlimited")
	fPartitions = registry.IntField("partitions", 0, MaxPartitions, "How many workers (default: the number of CPUs).").
			AtLeast(1, "").Below("must be 1 or more, got %d")

	fChildID      = registry.StringField("id", "", "The child's name within its supervisor.").Require("is required")
	fChildName    = registry.StringField("name", "", "A name the child is registered under, before its init runs and again on each restart.")
	fChildProcess = registry.RefField("process", registry.RefDefinition, childKinds,
		"The entry the child runs: a process.lua entry or another supervisor.").Require("is required")
	fChildRestart = registry.EnumField("restart", string(Permanent), restartTypes,
		"permanent (always restarted), transient (after an abnormal exit) or temporary (never).")
	fChildOnFailure = registry.EnumField("on_failure", string(ActionRestart), failureActs,
		"What a failure the restart type restarts does: apply the strategy, stop the child, escalate, or restart it alone.")
	fChildOnReload = registry.EnumField("on_reload", string(ReloadRestart), reloadActions,
		"What a reload that changes the child's definition does: restart it on the new one, keep it running, or upgrade it in place (same PID and mailbox). Absent: as its entry's on_reload says.")
	fChildArgs     = registry.ListField("args", "Arguments the child's method gets (default: its entry's args).")
	fChildShutdown = registry.DurationField("shutdown", 0,
		"Graceful stop deadline, then killed (default 5s, infinity for a supervisor, or the entry's stop_timeout).").
		Positive().Or("brutal_kill", "infinity")

	childFields = []*registry.Field{fChildID, fChildName, fChildProcess, fChildRestart, fChildOnFailure, fChildOnReload, fChildArgs, fChildShutdown}
	fChildren   = registry.ObjectsField("children", "The children, started in this order and stopped in the reverse.", childFields...)

	staticFields    = []*registry.Field{fStrategy, fMaxRestarts, fRestartWindow, fChildren}
	dynamicFields   = []*registry.Field{fOneForOne, fMaxRestarts, fRestartWindow, fChildren, fMaxChildren}
	partitionFields = []*registry.Field{fOneForOne, fMaxRestarts, fRestartWindow, fPartitions,
		fChildProcess, fChildRestart, fChildOnFailure, fChildOnReload, fChildArgs, fChildShutdown}
)

var _ registry.Declared = (*SupervisorKind)(nil)

// Fields implements registry.Declared.
func (k *SupervisorKind) Fields() []*registry.Field {
	switch k.name {
	case KindDynamic:
		return dynamicFields
	case KindPartition:
		return partitionFields
	}
	return staticFields
}

// decodeSpec reads the fields of kind, each by its declaration, and what
// only the file can tell (an empty name given, a supervisor naming itself
// as its child), then the one validate, whose problems d reports at their
// fields' positions (a field that already failed keeps its first error).
func decodeSpec(kind string, d *registry.Decoder) *Spec {
	s := &Spec{Kind: kind}
	self := d.Entry().ID
	var cds []*registry.Decoder // each child's, by index
	if kind == KindStatic {
		s.Strategy = Strategy(fStrategy.EnumValue(d))
	} else {
		s.Strategy = Strategy(fOneForOne.EnumValue(d))
	}
	s.MaxRestarts = fMaxRestarts.Int(d)
	s.RestartWindow = fRestartWindow.Duration(d)
	switch kind {
	case KindPartition:
		s.Partitions = fPartitions.Int(d)
		if !d.Has(fPartitions.Name) {
			s.Partitions = min(runtime.NumCPU(), MaxPartitions)
		}
		s.Worker = decodeChildFields(d, self, false)
	default:
		for _, cd := range fChildren.List(d) {
			s.Children = append(s.Children, decodeChildFields(cd, self, true))
			cds = append(cds, cd)
		}
		if kind == KindDynamic {
			s.MaxChildren = fMaxChildren.Int(d)
		}
	}
	top := problems.To(d)
	s.withDefaults().validate(top, func(i int) *problems.List {
		if kind == KindPartition {
			return top // the worker's fields sit among the supervisor's
		}
		return problems.To(cds[i])
	})
	// Validated: Start and Update do not check it again. (A spec with
	// problems is never started: its configuration is refused.)
	s.checked = true
	return s
}

// decodeChildFields reads a child spec (or a partition's worker template,
// whose fields sit at the entry's root and have no id).
func decodeChildFields(d *registry.Decoder, self registry.ID, withID bool) ChildSpec {
	var c ChildSpec
	if withID {
		c.ID = fChildID.Str(d)
		c.Name = fChildName.Str(d)
		if d.Has(fChildName.Name) {
			if err := checkChildName(c.Name); err != nil {
				d.Errorf(fChildName.Name, "%v", err)
			}
		}
	}
	c.Process = fChildProcess.Ref(d)
	if c.Process != "" && c.Process == self {
		d.Errorf(fChildProcess.Name, "a supervisor cannot be its own child")
	}
	c.Restart = RestartType(fChildRestart.EnumValue(d))
	c.OnFailure = FailureAction(fChildOnFailure.EnumValue(d))
	if d.Has(fChildOnReload.Name) { // absent: the entry's says (ChildSpec.OnReload)
		c.OnReload = ReloadAction(fChildOnReload.EnumValue(d))
	}
	c.Args = fChildArgs.Values(d)
	switch t, word := fChildShutdown.DurationOr(d); word {
	case "brutal_kill":
		c.Shutdown = BrutalKill
	case "infinity":
		c.Shutdown = Infinity
	default:
		c.Shutdown = t
	}
	return c
}
