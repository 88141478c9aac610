package pool

import (
	"time"

	"github.com/proctor-run/proctor/internal/problems"
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

// Spec is a decoded router.pool entry. It is immutable once decoded.
type Spec struct {
	Routee   registry.ID
	Size     int // initial size; 0 with a resizer lets the initial resize choose
	Strategy Strategy
	Timeout  time.Duration
	Interval time.Duration
	Resizer  *ResizerSpec // nil: fixed size

	checked bool // decodeSpec validated it; see check
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
	UpperBound int // default 10 (both, as Akka's reference.conf)

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
		Type: OptimalResizerType, LowerBound: 1, UpperBound: 10,
		ActionInterval: 5 * time.Second, DownsizeAfterUnderutilizedFor: 72 * time.Hour,
		ExploreStepSize: 0.1, ChanceOfExploration: 0.4, DownsizeRatio: 0.8, OptimizationRange: 16,
		WeightOfLatestMetric: 0.5, ChanceOfRampingDownWhenFull: 0.2,
	}
}

// The fields of a pool; the resizers' defaults are Akka's
// (DefaultResizerSpec, OptimalResizerSpec).
var (
	fRoutee = registry.RefField("routee", registry.RefDefinition, []string{"process.lua"},
		"The process.lua entry the pool spawns and supervises as its routees.").
		Require("required: the process.lua entry the pool spawns as its routees")
	fSize = registry.IntField("size", 0, MaxSize,
		"Routees to start with; required without a resizer, 0 with one lets its first resize choose.").
		AtLeast(0, "").Below("must be >= 0, got %d")
	fStrategy = registry.EnumField("strategy", string(RoundRobin), strategies, "How a message picks its routee(s).")
	fTimeout  = registry.DurationField("timeout", DefaultTimeout,
		"The deadline of scatter_gather_first_completed and tail_chopping.").
		Positive().Below("must be a positive, finite duration, got %s")
	fInterval = registry.DurationField("interval", DefaultInterval,
		"tail_chopping only: how long to wait before asking the next routee.").Positive()

	akkaDefault = DefaultResizerSpec()
	akkaOptimal = OptimalResizerSpec()

	fResizerType = registry.EnumField("type", string(DefaultResizerType), []string{string(DefaultResizerType), string(OptimalResizerType)},
		"default (Akka's DefaultResizer: pressure, rampup, backoff) or optimal_size_exploring.")
	fLowerBound = registry.IntField("lower_bound", akkaDefault.LowerBound, MaxSize, "The fewest routees.").
			AtLeast(0, "").Below("must be >= 0, got %d")
	fUpperBound = registry.IntField("upper_bound", akkaDefault.UpperBound, MaxSize, "The most routees.").
			AtLeast(1, "").Below("must be >= 1, got %d")

	fPressureThreshold = registry.IntField("pressure_threshold", akkaDefault.PressureThreshold, MaxPressureThreshold,
		"A routee is under pressure with at least this many messages waiting in its mailbox (0: while it handles one).").AtLeast(0, "").Below("must be >= 0, got %d")
	fRampupRate       = registry.FloatField("rampup_rate", akkaDefault.RampupRate, "Growth when every routee is busy, as a share of the size.").AtLeast(0, "")
	fBackoffThreshold = registry.FloatField("backoff_threshold", akkaDefault.BackoffThreshold,
		"Shrink when fewer than this share of the routees are busy.").Between(0, 1)
	fBackoffRate       = registry.FloatField("backoff_rate", akkaDefault.BackoffRate, "Shrinkage, as a share of the size: ceil(rate × size) routees, Akka's floor(-rate × size).").AtLeast(0, "")
	fMessagesPerResize = registry.IntField("messages_per_resize", akkaDefault.MessagesPerResize, MaxMessagesPerResize,
		"Messages between two resizes.").AtLeast(1, "").Below("must be > 0, got %d")

	fActionInterval = registry.DurationField("action_interval", akkaOptimal.ActionInterval, "Time between two resize actions.").Positive()
	fDownsizeAfter  = registry.DurationField("downsize_after_underutilized_for", akkaOptimal.DownsizeAfterUnderutilizedFor,
		"Shrink after the pool has been underused for this long.").Positive()
	fExploreStepSize = registry.FloatField("explore_step_size", akkaOptimal.ExploreStepSize,
		"How far an exploration resizes, as a share of the size.").AtLeast(0, "")
	fChanceOfExploration = registry.FloatField("chance_of_exploration", akkaOptimal.ChanceOfExploration,
		"The chance that a resize explores rather than optimizes.").Between(0, 1)
	fDownsizeRatio = registry.FloatField("downsize_ratio", akkaOptimal.DownsizeRatio,
		"An underused pool shrinks to this share of the most routees it used.").Between(0, 1)
	fOptimizationRange = registry.IntField("optimization_range", akkaOptimal.OptimizationRange, MaxOptimizationRange,
		"How many sizes around the current one an optimization considers.").AtLeast(2, "").Below("must be >= 2, got %d")
	fWeightOfLatestMetric = registry.FloatField("weight_of_latest_metric", akkaOptimal.WeightOfLatestMetric,
		"The weight of the latest measurement in the performance log.").Between(0, 1)
	fChanceOfRampingDown = registry.FloatField("chance_of_ramping_down_when_full", akkaOptimal.ChanceOfRampingDownWhenFull,
		"The chance to shrink while fully used.").Between(0, 1)

	defaultOnly = []*registry.Field{fPressureThreshold, fRampupRate, fBackoffThreshold, fBackoffRate, fMessagesPerResize}
	optimalOnly = []*registry.Field{
		fActionInterval, fDownsizeAfter, fExploreStepSize, fChanceOfExploration, fDownsizeRatio,
		fOptimizationRange, fWeightOfLatestMetric, fChanceOfRampingDown,
	}

	fResizer = registry.ObjectField("resizer", "Sizes the pool by load (Akka's resizers); without it the size is fixed.",
		fResizerType, fLowerBound, fUpperBound).
		Variant("type", string(DefaultResizerType), defaultOnly...).
		Variant("type", string(OptimalResizerType), optimalOnly...)

	poolFields = []*registry.Field{fRoutee, fSize, fStrategy, fTimeout, fInterval, fResizer}
)

var _ registry.Declared = Kind{}

// Fields implements registry.Declared.
func (Kind) Fields() []*registry.Field { return poolFields }

// decodeSpec reads a router.pool entry: each field by its declaration
// (type and limits), then what only the file can tell (a field the
// strategy or the resizer does not use, a size left out), then the one
// validate, whose problems d reports at their fields' positions (a field
// that already failed keeps its first error).
func decodeSpec(d *registry.Decoder) *Spec {
	s := &Spec{
		Routee:   fRoutee.Ref(d),
		Strategy: Strategy(fStrategy.EnumValue(d)),
		Timeout:  fTimeout.Duration(d),
		Interval: fInterval.Duration(d),
	}
	if d.Has(fInterval.Name) && !d.Failed(fStrategy.Name) && s.Strategy != TailChopping {
		d.Errorf(fInterval.Name, "only tail_chopping uses interval (strategy is %s)", s.Strategy)
	}
	rd := d
	if od := fResizer.Object(d); od != nil {
		s.Resizer, rd = decodeResizer(od), od
	}
	s.Size = fSize.Int(d)
	if s.Size == 0 && s.Resizer == nil && !d.Has(fSize.Name) {
		d.Errorf(fSize.Name, "required for a pool without a resizer")
	}
	s.validate(problems.To(d), problems.To(rd))
	// Validated: Start and Update do not check it again. (A spec with
	// problems is never started: its configuration is refused.)
	s.checked = true
	return s
}

// decodeResizer reads a resizer mapping; a field of the other type's
// resizer is an error only the file can show.
func decodeResizer(d *registry.Decoder) *ResizerSpec {
	typ := ResizerType(fResizerType.EnumValue(d))
	r, other, foreign := DefaultResizerSpec(), OptimalResizerType, optimalOnly
	if typ == OptimalResizerType {
		r, other, foreign = OptimalResizerSpec(), DefaultResizerType, defaultOnly
	}
	for _, f := range foreign {
		if d.Has(f.Name) {
			d.Errorf(f.Name, "belongs to the %s resizer, but this resizer is type %s: a pool has one resizer", other, typ)
		}
	}
	r.LowerBound = fLowerBound.Int(d)
	if d.Has(fUpperBound.Name) {
		r.UpperBound = fUpperBound.Int(d)
	}
	if typ == DefaultResizerType {
		r.PressureThreshold = fPressureThreshold.Int(d)
		r.RampupRate = fRampupRate.Float(d)
		r.BackoffThreshold = fBackoffThreshold.Float(d)
		r.BackoffRate = fBackoffRate.Float(d)
		r.MessagesPerResize = fMessagesPerResize.Int(d)
		return &r
	}
	r.ActionInterval = fActionInterval.Duration(d)
	r.DownsizeAfterUnderutilizedFor = fDownsizeAfter.Duration(d)
	r.ExploreStepSize = fExploreStepSize.Float(d)
	r.ChanceOfExploration = fChanceOfExploration.Float(d)
	r.DownsizeRatio = fDownsizeRatio.Float(d)
	r.OptimizationRange = fOptimizationRange.Int(d)
	r.WeightOfLatestMetric = fWeightOfLatestMetric.Float(d)
	r.ChanceOfRampingDownWhenFull = fChanceOfRampingDown.Float(d)
	return &r
}

// check returns what is wrong with a Spec built in Go, field by field
// (decodeSpec validated a decoded one already).
func (s *Spec) check() error {
	if s.checked {
		return nil
	}
	l := problems.New(nil)
	s.validate(l, l.Sub(fResizer.Name+".", nil))
	return l.Err()
}

// validate is the one set of rules of a pool's values, for a decoded
// Spec and one built in Go alike; p receives the problems of the pool's
// fields, rp those of its resizer. A resizer without a type, or with a
// zero messages_per_resize, would divide by zero on the first message.
func (s *Spec) validate(p, rp *problems.List) {
	if s.Routee == "" {
		p.Errorf(fRoutee.Name, "required")
	}
	p.Check(fStrategy, string(s.Strategy))
	p.Check(fTimeout, s.Timeout)
	if s.Strategy == TailChopping {
		p.Check(fInterval, s.Interval)
	}
	switch {
	case s.Size < 0:
		p.Check(fSize, s.Size)
	case s.Size == 0 && s.Resizer == nil:
		p.Errorf(fSize.Name, "must be >= 1 for a pool without a resizer, got 0")
	}
	if s.Resizer != nil {
		s.Resizer.validate(rp)
	}
}

// validate checks a resizer's values; see Spec.validate.
func (r *ResizerSpec) validate(p *problems.List) {
	p.Check(fLowerBound, r.LowerBound)
	if r.UpperBound < 1 {
		p.Check(fUpperBound, r.UpperBound)
	} else if r.LowerBound >= 0 && r.UpperBound < r.LowerBound {
		p.Errorf(fUpperBound.Name, "must be >= lower_bound, got %d < %d", r.UpperBound, r.LowerBound)
	}
	switch r.Type {
	case DefaultResizerType:
		p.Check(fPressureThreshold, r.PressureThreshold)
		p.Check(fRampupRate, r.RampupRate)
		p.Check(fBackoffThreshold, r.BackoffThreshold)
		p.Check(fBackoffRate, r.BackoffRate)
		p.Check(fMessagesPerResize, r.MessagesPerResize)
	case OptimalResizerType:
		p.Check(fActionInterval, r.ActionInterval)
		p.Check(fDownsizeAfter, r.DownsizeAfterUnderutilizedFor)
		p.Check(fExploreStepSize, r.ExploreStepSize)
		p.Check(fChanceOfExploration, r.ChanceOfExploration)
		p.Check(fDownsizeRatio, r.DownsizeRatio)
		p.Check(fOptimizationRange, r.OptimizationRange)
		p.Check(fWeightOfLatestMetric, r.WeightOfLatestMetric)
		p.Check(fChanceOfRampingDown, r.ChanceOfRampingDownWhenFull)
	default:
		p.Check(fResizerType, string(r.Type))
	}
}
