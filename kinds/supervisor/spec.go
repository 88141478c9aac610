package supervisor

import (
	"fmt"
	"math"
	"runtime"
	"time"

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
	// OnReload defaults to ReloadRestart.
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
	if c.OnReload == "" {
		c.OnReload = ReloadRestart
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

// validate checks a Spec (with its defaults applied) by the rules Decode
// enforces on YAML, so a Spec built in Go cannot run a dynamic supervisor
// all_for_one or a child with an unknown restart type.
func (s *Spec) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, args...))
	}
	switch s.Kind {
	case KindStatic:
		switch s.Strategy {
		case OneForOne, AllForOne, RestForOne:
		default:
			return bad("strategy %q is not one_for_one, all_for_one or rest_for_one", s.Strategy)
		}
	case KindDynamic, KindPartition:
		if s.Strategy != OneForOne {
			return bad("a %s supports one_for_one only, not %q", s.Kind, s.Strategy)
		}
	default:
		return bad("kind %q is not %s, %s or %s", s.Kind, KindStatic, KindDynamic, KindPartition)
	}
	switch {
	case s.MaxRestarts < 0:
		return bad("max_restarts must be 0 or more, got %d", s.MaxRestarts)
	case s.RestartWindow <= 0:
		return bad("restart_window must be positive, got %s", s.RestartWindow)
	case s.MaxChildren < 0:
		return bad("max_children must be 0 or more, got %d", s.MaxChildren)
	}
	seen := map[string]bool{}
	for _, c := range s.Children {
		if err := validateChild(c); err != nil {
			return fmt.Errorf("child %q: %w", c.ID, err)
		}
		if seen[c.ID] {
			return bad("duplicate child id %q", c.ID)
		}
		seen[c.ID] = true
	}
	return nil
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

var _ registry.Bounded = (*SupervisorKind)(nil)

// Bounds implements registry.Bounded.
func (k *SupervisorKind) Bounds() []registry.Bound {
	b := []registry.Bound{{Field: "max_restarts", Max: MaxRestartsLimit}}
	switch k.name {
	case KindPartition:
		b = append(b, registry.Bound{Field: "partitions", Max: MaxPartitions})
	case KindDynamic:
		b = append(b, registry.Bound{Field: "max_children", Max: MaxChildrenLimit})
	}
	return b
}

var childKinds = []string{"process.lua", KindStatic, KindDynamic, KindPartition}

// decodeSpec reads the fields of kind.
func decodeSpec(kind string, d *registry.Decoder) *Spec {
	s := &Spec{Kind: kind}
	self := d.Entry().ID
	if kind == KindStatic {
		s.Strategy = Strategy(d.Enum("strategy", string(OneForOne), string(OneForOne), string(AllForOne), string(RestForOne)))
	} else if d.Has("strategy") {
		s.Strategy = Strategy(d.Enum("strategy", string(OneForOne), string(OneForOne)))
	} else {
		s.Strategy = OneForOne
	}
	s.MaxRestarts = d.Count("max_restarts", DefaultMaxRestarts, MaxRestartsLimit)
	if s.MaxRestarts < 0 {
		d.Errorf("max_restarts", "must be 0 or more, got %d", s.MaxRestarts)
	}
	s.RestartWindow = d.Duration("restart_window", DefaultRestartWindow)
	if s.RestartWindow <= 0 {
		d.Errorf("restart_window", "must be a positive duration, got %s", s.RestartWindow)
	}
	switch kind {
	case KindPartition:
		s.Partitions = d.Count("partitions", min(runtime.NumCPU(), MaxPartitions), MaxPartitions)
		if s.Partitions < 1 {
			d.Errorf("partitions", "must be 1 or more, got %d", s.Partitions)
		}
		if !d.Has("process") {
			d.Errorf("process", "is required")
		}
		s.Worker = decodeChildFields(d, self, false)
	default:
		seen := map[string]bool{}
		for _, cd := range d.List("children") {
			c := decodeChildFields(cd, self, true)
			if c.ID != "" {
				if seen[c.ID] {
					cd.Errorf("id", "duplicate child id %q", c.ID)
				}
				seen[c.ID] = true
			}
			s.Children = append(s.Children, c)
		}
		if kind == KindDynamic {
			s.MaxChildren = d.Count("max_children", 0, MaxChildrenLimit)
			if s.MaxChildren < 0 {
				d.Errorf("max_children", "must be 0 (unlimited) or more, got %d", s.MaxChildren)
			} else if s.MaxChildren > 0 && len(s.Children) > s.MaxChildren {
				d.Errorf("children", "%d children exceed max_children %d", len(s.Children), s.MaxChildren)
			}
		}
	}
	return s
}

// decodeChildFields reads a child spec (or a partition's worker template,
// whose fields sit at the entry's root and have no id).
func decodeChildFields(d *registry.Decoder, self registry.ID, withID bool) ChildSpec {
	var c ChildSpec
	if withID {
		c.ID = d.String("id", "")
		if c.ID == "" {
			d.Errorf("id", "is required")
		}
		if !d.Has("process") {
			d.Errorf("process", "is required")
		}
		c.Name = d.String("name", "")
		if d.Has("name") {
			if err := checkChildName(c.Name); err != nil {
				d.Errorf("name", "%v", err)
			}
		}
	}
	c.Process = d.Ref("process", registry.RefDefinition, childKinds...)
	if c.Process != "" && c.Process == self {
		d.Errorf("process", "a supervisor cannot be its own child")
	}
	c.Restart = RestartType(d.Enum("restart", string(Permanent), string(Permanent), string(Transient), string(Temporary)))
	c.OnFailure = FailureAction(d.Enum("on_failure", string(ActionRestart), string(ActionRestart), string(ActionStop), string(ActionEscalate), string(ActionResume)))
	c.OnReload = ReloadAction(d.Enum("on_reload", string(ReloadRestart), string(ReloadRestart), string(ReloadKeep)))
	if v, ok := d.Value("args"); ok && v != nil {
		list, isList := v.([]any)
		if !isList {
			d.Errorf("args", "must be a list")
		} else {
			c.Args = list
		}
	}
	if d.Has("shutdown") {
		c.Shutdown = parseShutdown(d)
	}
	return c
}

func parseShutdown(d *registry.Decoder) time.Duration {
	switch s := d.String("shutdown", ""); s {
	case "brutal_kill":
		return BrutalKill
	case "infinity":
		return Infinity
	default:
		t, err := time.ParseDuration(s)
		if err != nil || t <= 0 {
			d.Errorf("shutdown", "must be a positive duration, \"brutal_kill\" or \"infinity\", got %q", s)
			return 0
		}
		return t
	}
}
