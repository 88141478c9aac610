package pool

import (
	"errors"
	"fmt"
	"time"

	"github.com/proctor-run/proctor/registry"
)

// Strategy names a routing strategy.
type Strategy string

// The strategies of SPEC §3.
const (
	RoundRobin      Strategy = "round_robin"
	Random          Strategy = "random"
	SmallestMailbox Strategy = "smallest_mailbox"
	Broadcast       Strategy = "broadcast"
	ConsistentHash  Strategy = "consistent_hash"
	ScatterGather   Strategy = "scatter_gather_first_completed"
	TailChopping    Strategy = "tail_chopping"
)

var strategies = []string{
	string(RoundRobin), string(Random), string(SmallestMailbox), string(Broadcast),
	string(ConsistentHash), string(ScatterGather), string(TailChopping),
}

// racing reports whether s asks several routees and keeps the first reply.
func (s Strategy) racing() bool { return s == ScatterGather || s == TailChopping }

// Defaults of the pool's fields.
const (
	// DefaultTimeout is the scatter/tail-chopping deadline: just under the
	// 5s default ask timeout, so a caller still listens when the pool
	// reports which routees failed.
	DefaultTimeout = 4500 * time.Millisecond
	// DefaultInterval is how long tail_chopping waits before asking the
	// next routee.
	DefaultInterval = 10 * time.Millisecond
)

// Upper bounds of a pool's counts, checked when the entry is validated
// (runner --limit router.pool.FIELD=N overrides them). Every routee is a
// process with its own state (a Lua state is 50–150 KB), so a size is
// memory.
const (
	// MaxSize bounds size and the resizer's lower_bound and upper_bound.
	MaxSize = 1000
	// MaxPressureThreshold bounds resizer.pressure_threshold (a mailbox length).
	MaxPressureThreshold = 1_000_000
	// MaxMessagesPerResize bounds resizer.messages_per_resize.
	MaxMessagesPerResize = 1_000_000
	// MaxOptimizationRange bounds resizer.optimization_range.
	MaxOptimizationRange = 1000
)

// Bounds implements registry.Bounded.
func (Kind) Bounds() []registry.Bound {
	return []registry.Bound{
		{Field: "size", Max: MaxSize},
		{Field: "resizer.lower_bound", Max: MaxSize},
		{Field: "resizer.upper_bound", Max: MaxSize},
		{Field: "resizer.pressure_threshold", Max: MaxPressureThreshold},
		{Field: "resizer.messages_per_resize", Max: MaxMessagesPerResize},
		{Field: "resizer.optimization_range", Max: MaxOptimizationRange},
	}
}

// Spec is a decoded router.pool entry. It is immutable once decoded.
type Spec struct {
	Routee   registry.ID
	Size     int // initial size; 0 with a resizer lets the initial resize choose
	Strategy Strategy
	Timeout  time.Duration
	Interval time.Duration
	Resizer  *ResizerSpec // nil: fixed size
}

// ResizerType names a resizer.
type ResizerType string

const (
	// DefaultResizerType is Akka's DefaultResizer: pressure, rampup, backoff.
	DefaultResizerType ResizerType = "default"
	// OptimalResizerType is Akka's DefaultOptimalSizeExploringResizer.
	OptimalResizerType ResizerType = "optimal_size_exploring"
)

// ResizerSpec holds the parameters of both resizers; only those of Type are
// meaningful (setting the other type's parameters is a validation error).
// Defaults are Akka's.
type ResizerSpec struct {
	Type       ResizerType
	LowerBound int // default 1
	UpperBound int // default 10 (default), 30 (optimal_size_exploring)

	// default
	PressureThreshold int     // 1
	RampupRate        float64 // 0.2
	BackoffThreshold  float64 // 0.3
	BackoffRate       float64 // 0.1
	MessagesPerResize int     // 10

	// optimal_size_exploring
	ActionInterval                time.Duration // 5s
	DownsizeAfterUnderutilizedFor time.Duration // 72h
	ExploreStepSize               float64       // 0.1
	ChanceOfExploration           float64       // 0.4
	DownsizeRatio                 float64       // 0.8
	OptimizationRange             int           // 16
	WeightOfLatestMetric          float64       // 0.5
	ChanceOfRampingDownWhenFull   float64       // 0.2
}

// DefaultResizerSpec returns Akka's DefaultResizer defaults.
func DefaultResizerSpec() ResizerSpec {
	return ResizerSpec{
		Type: DefaultResizerType, LowerBound: 1, UpperBound: 10,
		PressureThreshold: 1, RampupRate: 0.2, BackoffThreshold: 0.3, BackoffRate: 0.1, MessagesPerResize: 10,
	}
}

// OptimalResizerSpec returns Akka's DefaultOptimalSizeExploringResizer defaults.
func OptimalResizerSpec() ResizerSpec {
	return ResizerSpec{
		Type: OptimalResizerType, LowerBound: 1, UpperBound: 30,
		ActionInterval: 5 * time.Second, DownsizeAfterUnderutilizedFor: 72 * time.Hour,
		ExploreStepSize: 0.1, ChanceOfExploration: 0.4, DownsizeRatio: 0.8, OptimizationRange: 16,
		WeightOfLatestMetric: 0.5, ChanceOfRampingDownWhenFull: 0.2,
	}
}

var defaultOnly = []string{"pressure_threshold", "rampup_rate", "backoff_threshold", "backoff_rate", "messages_per_resize"}
var optimalOnly = []string{
	"action_interval", "downsize_after_underutilized_for", "explore_step_size", "chance_of_exploration",
	"downsize_ratio", "optimization_range", "weight_of_latest_metric", "chance_of_ramping_down_when_full",
}

// decodeSpec reads and validates a router.pool entry, reporting every
// problem through d.
func decodeSpec(d *registry.Decoder) *Spec {
	s := &Spec{}
	s.Routee = d.Ref("routee", registry.RefDefinition, "process.lua")
	if s.Routee == "" && !d.Has("routee") {
		d.Errorf("routee", "required: the process.lua entry the pool spawns as its routees")
	}
	s.Strategy = Strategy(d.Enum("strategy", string(RoundRobin), strategies...))
	s.Timeout = d.Duration("timeout", DefaultTimeout)
	if s.Timeout <= 0 {
		d.Errorf("timeout", "must be a positive, finite duration, got %s", s.Timeout)
	}
	s.Interval = d.Duration("interval", DefaultInterval)
	if d.Has("interval") {
		if s.Strategy != TailChopping {
			d.Errorf("interval", "only tail_chopping uses interval (strategy is %s)", s.Strategy)
		} else if s.Interval <= 0 {
			d.Errorf("interval", "must be a positive duration, got %s", s.Interval)
		}
	}
	if rd := d.Object("resizer"); rd != nil {
		s.Resizer = decodeResizer(rd)
	}
	s.Size = d.Count("size", 0, MaxSize)
	switch {
	case s.Size < 0:
		d.Errorf("size", "must be >= 0, got %d", s.Size)
	case s.Size == 0 && s.Resizer == nil:
		if d.Has("size") {
			d.Errorf("size", "must be >= 1 for a pool without a resizer, got 0")
		} else {
			d.Errorf("size", "required for a pool without a resizer")
		}
	}
	return s
}

func decodeResizer(d *registry.Decoder) *ResizerSpec {
	typ := ResizerType(d.Enum("type", string(DefaultResizerType), string(DefaultResizerType), string(OptimalResizerType)))
	var r ResizerSpec
	foreign := optimalOnly
	if typ == OptimalResizerType {
		r = OptimalResizerSpec()
		foreign = defaultOnly
	} else {
		r = DefaultResizerSpec()
	}
	for _, f := range foreign {
		if d.Has(f) {
			other := OptimalResizerType
			if typ == OptimalResizerType {
				other = DefaultResizerType
			}
			d.Errorf(f, "belongs to the %s resizer, but this resizer is type %s: a pool has one resizer", other, typ)
		}
	}
	r.LowerBound = d.Count("lower_bound", r.LowerBound, MaxSize)
	r.UpperBound = d.Count("upper_bound", r.UpperBound, MaxSize)
	if r.LowerBound < 0 {
		d.Errorf("lower_bound", "must be >= 0, got %d", r.LowerBound)
	}
	if r.UpperBound < 1 {
		d.Errorf("upper_bound", "must be >= 1, got %d", r.UpperBound)
	} else if r.UpperBound < r.LowerBound {
		d.Errorf("upper_bound", "must be >= lower_bound, got %d < %d", r.UpperBound, r.LowerBound)
	}
	rate := func(field string, v *float64, lo, hi float64) {
		*v = d.Float(field, *v)
		if *v < lo || *v > hi {
			if hi > 1e300 {
				d.Errorf(field, "must be >= %g, got %g", lo, *v)
			} else {
				d.Errorf(field, "must be between %g and %g, got %g", lo, hi, *v)
			}
		}
	}
	const inf = 1e308
	if typ == DefaultResizerType {
		r.PressureThreshold = d.Count("pressure_threshold", r.PressureThreshold, MaxPressureThreshold)
		if r.PressureThreshold < 0 {
			d.Errorf("pressure_threshold", "must be >= 0, got %d", r.PressureThreshold)
		}
		rate("rampup_rate", &r.RampupRate, 0, inf)
		rate("backoff_threshold", &r.BackoffThreshold, 0, 1)
		rate("backoff_rate", &r.BackoffRate, 0, inf)
		r.MessagesPerResize = d.Count("messages_per_resize", r.MessagesPerResize, MaxMessagesPerResize)
		if r.MessagesPerResize <= 0 {
			d.Errorf("messages_per_resize", "must be > 0, got %d", r.MessagesPerResize)
		}
		return &r
	}
	r.ActionInterval = d.Duration("action_interval", r.ActionInterval)
	if r.ActionInterval <= 0 {
		d.Errorf("action_interval", "must be a positive duration, got %s", r.ActionInterval)
	}
	r.DownsizeAfterUnderutilizedFor = d.Duration("downsize_after_underutilized_for", r.DownsizeAfterUnderutilizedFor)
	if r.DownsizeAfterUnderutilizedFor <= 0 {
		d.Errorf("downsize_after_underutilized_for", "must be a positive duration, got %s", r.DownsizeAfterUnderutilizedFor)
	}
	rate("explore_step_size", &r.ExploreStepSize, 0, inf)
	rate("chance_of_exploration", &r.ChanceOfExploration, 0, 1)
	rate("downsize_ratio", &r.DownsizeRatio, 0, 1)
	r.OptimizationRange = d.Count("optimization_range", r.OptimizationRange, MaxOptimizationRange)
	if r.OptimizationRange < 2 {
		d.Errorf("optimization_range", "must be >= 2, got %d", r.OptimizationRange)
	}
	rate("weight_of_latest_metric", &r.WeightOfLatestMetric, 0, 1)
	rate("chance_of_ramping_down_when_full", &r.ChanceOfRampingDownWhenFull, 0, 1)
	return &r
}

// validate checks a Spec built in Go (not decoded from YAML) by the same
// rules; it returns the first problem.
func (s *Spec) validate() error {
	switch {
	case s.Routee == "":
		return fmt.Errorf("routee: required")
	case s.Timeout <= 0:
		return fmt.Errorf("timeout: must be positive, got %s", s.Timeout)
	case s.Strategy == TailChopping && s.Interval <= 0:
		return fmt.Errorf("interval: must be positive, got %s", s.Interval)
	case s.Size < 0 || (s.Size == 0 && s.Resizer == nil):
		return fmt.Errorf("size: must be >= 1 without a resizer, got %d", s.Size)
	}
	known := false
	for _, k := range strategies {
		known = known || string(s.Strategy) == k
	}
	if !known {
		return fmt.Errorf("strategy: unknown %q", s.Strategy)
	}
	if r := s.Resizer; r != nil {
		return r.validate()
	}
	return nil
}

// validate checks a resizer built in Go by decodeResizer's rules: a
// resizer without a type, or with a zero messages_per_resize, would divide
// by zero on the first message.
func (r *ResizerSpec) validate() error {
	if r.LowerBound < 0 || r.UpperBound < 1 || r.UpperBound < r.LowerBound {
		return fmt.Errorf("resizer: bounds %d..%d out of order", r.LowerBound, r.UpperBound)
	}
	unit := func(name string, v float64) error {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("resizer.%s: must be between 0 and 1, got %g", name, v)
		}
		return nil
	}
	nonNeg := func(name string, v float64) error {
		if !(v >= 0) {
			return fmt.Errorf("resizer.%s: must be >= 0, got %g", name, v)
		}
		return nil
	}
	switch r.Type {
	case DefaultResizerType:
		switch {
		case r.PressureThreshold < 0:
			return fmt.Errorf("resizer.pressure_threshold: must be >= 0, got %d", r.PressureThreshold)
		case r.MessagesPerResize <= 0:
			return fmt.Errorf("resizer.messages_per_resize: must be > 0, got %d", r.MessagesPerResize)
		}
		return errors.Join(nonNeg("rampup_rate", r.RampupRate), unit("backoff_threshold", r.BackoffThreshold),
			nonNeg("backoff_rate", r.BackoffRate))
	case OptimalResizerType:
		switch {
		case r.ActionInterval <= 0:
			return fmt.Errorf("resizer.action_interval: must be positive, got %s", r.ActionInterval)
		case r.DownsizeAfterUnderutilizedFor <= 0:
			return fmt.Errorf("resizer.downsize_after_underutilized_for: must be positive, got %s", r.DownsizeAfterUnderutilizedFor)
		case r.OptimizationRange < 2:
			return fmt.Errorf("resizer.optimization_range: must be >= 2, got %d", r.OptimizationRange)
		}
		return errors.Join(nonNeg("explore_step_size", r.ExploreStepSize), unit("chance_of_exploration", r.ChanceOfExploration),
			unit("downsize_ratio", r.DownsizeRatio), unit("weight_of_latest_metric", r.WeightOfLatestMetric),
			unit("chance_of_ramping_down_when_full", r.ChanceOfRampingDownWhenFull))
	}
	return fmt.Errorf("resizer.type: %q is not %s or %s", r.Type, DefaultResizerType, OptimalResizerType)
}
