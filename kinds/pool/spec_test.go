package pool

import (
	"context"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

func decode(t *testing.T, src string) (*Spec, *registry.Entry, []error) {
	t.Helper()
	e := &registry.Entry{ID: "app:pool", Kind: KindName}
	s, errs := decodeEntry(t, Kind{}, e, src)
	return s.(*Spec), e, errs
}

func decodeWith(t *testing.T, k registry.Kind, src string) (any, []error) {
	t.Helper()
	return decodeEntry(t, k, &registry.Entry{ID: "app:pool", Kind: k.Name()}, src)
}

func decodeEntry(t *testing.T, k registry.Kind, e *registry.Entry, src string) (any, []error) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	var errs []error
	d := registry.NewDecoder(e, "pools.yaml", doc.Content[0], &errs, nil)
	s := k.Decode(d)
	d.Finish()
	return s, errs
}

func TestDecodeDefaults(t *testing.T) {
	s, e, errs := decode(t, "routee: replica\nsize: 3\n")
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if s.Routee != "app:replica" || s.Size != 3 || s.Strategy != RoundRobin || s.Timeout != 4500*time.Millisecond || s.Resizer != nil {
		t.Fatalf("%+v", s)
	}
	if len(e.Refs) != 1 || e.Refs[0].To != "app:replica" || e.Refs[0].Mode != registry.RefDefinition || e.Refs[0].Kinds[0] != "process.lua" {
		t.Fatalf("refs: %+v", e.Refs)
	}

	s, _, errs = decode(t, "routee: app:r\nresizer: {type: default}\n")
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if *s.Resizer != DefaultResizerSpec() {
		t.Fatalf("default resizer: %+v", *s.Resizer)
	}
	want := ResizerSpec{Type: DefaultResizerType, LowerBound: 1, UpperBound: 10, PressureThreshold: 1, RampupRate: 0.2,
		BackoffThreshold: 0.3, BackoffRate: 0.1, MessagesPerResize: 10}
	if *s.Resizer != want {
		t.Fatalf("Akka's DefaultResizer defaults: %+v", *s.Resizer)
	}

	s, _, errs = decode(t, "routee: app:r\nresizer: {type: optimal_size_exploring, upper_bound: 12}\n")
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	wantOpt := ResizerSpec{Type: OptimalResizerType, LowerBound: 1, UpperBound: 12, ActionInterval: 5 * time.Second,
		DownsizeAfterUnderutilizedFor: 72 * time.Hour, ExploreStepSize: 0.1, ChanceOfExploration: 0.4, DownsizeRatio: 0.8,
		OptimizationRange: 16, WeightOfLatestMetric: 0.5, ChanceOfRampingDownWhenFull: 0.2}
	if *s.Resizer != wantOpt {
		t.Fatalf("Akka's optimal-size-exploring defaults: %+v", *s.Resizer)
	}

	s, _, errs = decode(t, `
routee: app:r
strategy: tail_chopping
timeout: 250ms
interval: 20ms
resizer:
  type: default
  lower_bound: 2
  upper_bound: 4
  pressure_threshold: 3
  rampup_rate: 0.5
  backoff_threshold: 0.2
  backoff_rate: 0.25
  messages_per_resize: 5
`)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if s.Strategy != TailChopping || s.Timeout != 250*time.Millisecond || s.Interval != 20*time.Millisecond ||
		*s.Resizer != (ResizerSpec{Type: DefaultResizerType, LowerBound: 2, UpperBound: 4, PressureThreshold: 3, RampupRate: 0.5,
			BackoffThreshold: 0.2, BackoffRate: 0.25, MessagesPerResize: 5}) {
		t.Fatalf("%+v %+v", s, s.Resizer)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // each must appear in one error, with its field
	}{
		{"routee missing", "size: 1", []string{"routee: required"}},
		{"size missing", "routee: r", []string{"size: required for a pool without a resizer"}},
		{"size zero", "routee: r\nsize: 0", []string{"size: must be >= 1"}},
		{"size negative", "routee: r\nsize: -2", []string{"size: must be >= 0"}},
		{"timeout zero", "routee: r\nsize: 1\ntimeout: 0", []string{"timeout: must be a positive, finite duration"}},
		{"timeout negative", "routee: r\nsize: 1\ntimeout: -5ms", []string{"timeout: must be a positive"}},
		{"timeout not a duration", "routee: r\nsize: 1\ntimeout: soon", []string{"timeout: must be a duration"}},
		{"unknown strategy", "routee: r\nsize: 1\nstrategy: round_robbin", []string{`strategy: unknown value "round_robbin" (did you mean "round_robin"?)`}},
		{"interval without tail chopping", "routee: r\nsize: 1\ninterval: 5ms", []string{"interval: only tail_chopping uses interval"}},
		{"interval zero", "routee: r\nsize: 1\nstrategy: tail_chopping\ninterval: 0", []string{"interval: must be a positive duration"}},
		{"unknown field", "routee: r\nsize: 1\nsise: 2", []string{`sise: unknown field (did you mean "size"?)`}},
		{"unknown resizer type", "routee: r\nresizer: {type: clever}", []string{"resizer.type: unknown value"}},
		{"both resizers", "routee: r\nresizer: {type: default, action_interval: 1s, rampup_rate: 0.3}",
			[]string{"resizer.action_interval: belongs to the optimal_size_exploring resizer, but this resizer is type default"}},
		{"both resizers, other way", "routee: r\nresizer: {type: optimal_size_exploring, messages_per_resize: 3}",
			[]string{"resizer.messages_per_resize: belongs to the default resizer"}},
		{"bounds out of order", "routee: r\nresizer: {lower_bound: 5, upper_bound: 2}", []string{"resizer.upper_bound: must be >= lower_bound, got 2 < 5"}},
		{"negative lower bound", "routee: r\nresizer: {lower_bound: -1}", []string{"resizer.lower_bound: must be >= 0"}},
		{"zero upper bound", "routee: r\nresizer: {lower_bound: 0, upper_bound: 0}", []string{"resizer.upper_bound: must be >= 1"}},
		{"rates out of range", "routee: r\nresizer: {rampup_rate: -0.1, backoff_threshold: 1.5, backoff_rate: -1, messages_per_resize: 0, pressure_threshold: -1}",
			[]string{"resizer.rampup_rate: must be >= 0", "resizer.backoff_threshold: must be between 0 and 1", "resizer.backoff_rate: must be >= 0",
				"resizer.messages_per_resize: must be > 0", "resizer.pressure_threshold: must be >= 0"}},
		{"optimal rates out of range", `routee: r
resizer:
  type: optimal_size_exploring
  chance_of_exploration: 1.2
  weight_of_latest_metric: -0.5
  chance_of_ramping_down_when_full: 2
  downsize_ratio: 1.5
  explore_step_size: -1
  optimization_range: 1
  action_interval: 0
  downsize_after_underutilized_for: -1h`,
			[]string{"resizer.chance_of_exploration: must be between 0 and 1", "resizer.weight_of_latest_metric: must be between 0 and 1",
				"resizer.chance_of_ramping_down_when_full: must be between 0 and 1", "resizer.downsize_ratio: must be between 0 and 1",
				"resizer.explore_step_size: must be >= 0", "resizer.optimization_range: must be >= 2",
				"resizer.action_interval: must be a positive duration", "resizer.downsize_after_underutilized_for: must be a positive duration"}},
		{"unknown resizer field", "routee: r\nresizer: {type: default, lowerbound: 1}", []string{`resizer.lowerbound: unknown field (did you mean "lower_bound"?)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, errs := decode(t, c.src)
			if len(errs) < len(c.want) {
				t.Fatalf("want %d errors, got %v", len(c.want), errs)
			}
			for _, w := range c.want {
				found := false
				for _, e := range errs {
					s := e.Error()
					found = found || (strings.Contains(s, w) && strings.HasPrefix(s, "pools.yaml:") && strings.Contains(s, "app:pool"))
				}
				if !found {
					t.Errorf("no error %q (with file:line:col and entry ID) in %v", w, errs)
				}
			}
		})
	}
}

// A strategy cut short gets its full name suggested, and the fields that
// depend on the strategy are not blamed for its mistake: one error, the
// strategy's (interval was refused as "strategy is round_robin", the
// default that stood in for the unknown value).
func TestUnknownStrategyIsTheOnlyError(t *testing.T) {
	_, _, errs := decode(t, "routee: r\nsize: 3\nstrategy: scatter_gather\ninterval: 10ms")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `strategy: unknown value "scatter_gather" (did you mean "scatter_gather_first_completed"?)`) {
		t.Fatalf("errors %v; want only the strategy's, with its suggestion", errs)
	}
}

// A Spec built in Go is held to the rules decoding enforces: a resizer
// without a type had a zero messages_per_resize, and the first message
// divided by it (a panic on the sender's goroutine or the pool's loop).
func TestStartValidatesGoResizer(t *testing.T) {
	def := func(mod func(*ResizerSpec)) *ResizerSpec {
		r := DefaultResizerSpec()
		mod(&r)
		return &r
	}
	opt := func(mod func(*ResizerSpec)) *ResizerSpec {
		r := OptimalResizerSpec()
		mod(&r)
		return &r
	}
	for _, tc := range []struct {
		name string
		rz   *ResizerSpec
	}{
		{"no type", &ResizerSpec{LowerBound: 1, UpperBound: 4}},
		{"unknown type", &ResizerSpec{Type: "clever", LowerBound: 1, UpperBound: 4, MessagesPerResize: 10}},
		{"negative pressure threshold", def(func(r *ResizerSpec) { r.PressureThreshold = -1 })},
		{"negative rampup rate", def(func(r *ResizerSpec) { r.RampupRate = -0.1 })},
		{"backoff threshold above 1", def(func(r *ResizerSpec) { r.BackoffThreshold = 1.5 })},
		{"negative backoff rate", def(func(r *ResizerSpec) { r.BackoffRate = -1 })},
		{"zero messages per resize", def(func(r *ResizerSpec) { r.MessagesPerResize = 0 })},
		{"zero downsize period", opt(func(r *ResizerSpec) { r.DownsizeAfterUnderutilizedFor = 0 })},
		{"negative explore step", opt(func(r *ResizerSpec) { r.ExploreStepSize = -1 })},
		{"exploration chance above 1", opt(func(r *ResizerSpec) { r.ChanceOfExploration = 1.2 })},
		{"downsize ratio above 1", opt(func(r *ResizerSpec) { r.DownsizeRatio = 1.5 })},
		{"weight below 0", opt(func(r *ResizerSpec) { r.WeightOfLatestMetric = -0.5 })},
		{"ramp-down chance above 1", opt(func(r *ResizerSpec) { r.ChanceOfRampingDownWhenFull = 2 })},
		{"optimization range 1", opt(func(r *ResizerSpec) { r.OptimizationRange = 1 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.routee("app:worker", func() process.Behavior { return &worker{} })
			spec := &Spec{Routee: "app:worker", Strategy: RoundRobin, Timeout: time.Second, Resizer: tc.rz}
			p, err := Start(context.Background(), h.env, "app:pool", spec, registry.StartOptions{})
			if err == nil {
				defer func() { _ = p.Stop(context.Background()) }()
				_ = p.Tell("x")
				t.Fatal("started")
			}
			if value.KindOf(err) != value.KindInvalid {
				t.Fatalf("err %v, want invalid", err)
			}
		})
	}
}

// One validate holds a decoded spec and one built in Go to the same rules
// with the same words: a rule across fields reads the same from a file
// (at the field's line) and from Start, and a decoded spec is not
// validated again when it starts or updates a pool.
func TestOneValidateForFileAndGo(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		spec      *Spec
		want      string
	}{
		{"bounds out of order", "routee: r\nresizer: {lower_bound: 5, upper_bound: 2}",
			&Spec{Routee: "r", Strategy: RoundRobin, Timeout: time.Second, Resizer: &ResizerSpec{Type: DefaultResizerType, LowerBound: 5, UpperBound: 2, MessagesPerResize: 1}},
			"resizer.upper_bound: must be >= lower_bound, got 2 < 5"},
		{"size zero without a resizer", "routee: r\nsize: 0",
			&Spec{Routee: "r", Strategy: RoundRobin, Timeout: time.Second},
			"size: must be >= 1 for a pool without a resizer, got 0"},
		{"tail chopping without interval", "routee: r\nsize: 1\nstrategy: tail_chopping\ninterval: 0",
			&Spec{Routee: "r", Size: 1, Strategy: TailChopping, Timeout: time.Second},
			"interval: must be a positive duration, got 0s"},
		// The limits and values below are declared once, on the field.
		{"unknown strategy", "routee: r\nsize: 1\nstrategy: round_robn",
			&Spec{Routee: "r", Size: 1, Strategy: "round_robn", Timeout: time.Second},
			`strategy: unknown value "round_robn" (did you mean "round_robin"?); one of ` + strings.Join(strategies, ", ")},
		{"rate out of range", "routee: r\nresizer: {backoff_threshold: 1.5}",
			&Spec{Routee: "r", Strategy: RoundRobin, Timeout: time.Second, Resizer: &ResizerSpec{Type: DefaultResizerType, LowerBound: 1, UpperBound: 10, BackoffThreshold: 1.5, MessagesPerResize: 1}},
			"resizer.backoff_threshold: must be between 0 and 1, got 1.5"},
		{"optimization range", "routee: r\nresizer: {type: optimal_size_exploring, optimization_range: 1}",
			func() *Spec {
				r := OptimalResizerSpec()
				r.OptimizationRange = 1
				return &Spec{Routee: "r", Strategy: RoundRobin, Timeout: time.Second, Resizer: &r}
			}(),
			"resizer.optimization_range: must be >= 2, got 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, errs := decode(t, tc.src)
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "pools.yaml:") || !strings.HasSuffix(errs[0].Error(), tc.want) {
				t.Errorf("decoded: %v, want one error at its line ending %q", errs, tc.want)
			}
			err := tc.spec.check()
			if err == nil || err.Error() != tc.want {
				t.Errorf("built in Go: %v, want %q", err, tc.want)
			}
		})
	}
	s, _, errs := decode(t, "routee: r\nsize: 2")
	if len(errs) != 0 || !s.checked || s.check() != nil {
		t.Fatalf("a decoded spec is checked once: %v %v", errs, s.checked)
	}
}
