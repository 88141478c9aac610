package pgscope

import (
	"time"

	"github.com/proctor-run/proctor/registry"
)

// KindName is the kind field of a scope entry.
const KindName = "pg.scope"

// Spec is a decoded pg.scope entry. Every field has the default of the seed;
// the zero Spec is not valid, use DefaultSpec.
type Spec struct {
	// ProtocolTimeout bounds inter-node sync and discover operations, and a
	// local caller's wait for the scope's loop. Default 5s.
	ProtocolTimeout time.Duration
	// BroadcastTimeout bounds the delivery of a broadcast to one member.
	// Default 5s.
	BroadcastTimeout time.Duration
	// AntiEntropyInterval is the period of the reconcile loop that pushes a
	// full sync to one peer per tick; 0 disables it. Default 30s.
	AntiEntropyInterval time.Duration
	// CircuitBreakerFailures is how many consecutive send failures to a node
	// open its circuit. Default 3.
	CircuitBreakerFailures int
	// CircuitBreakerResetTime is how long an open circuit waits before a
	// half-open probe. Default 10s.
	CircuitBreakerResetTime time.Duration
	// MaxRetries is how often a failed join/leave fan-out is retried; 0
	// disables retries. Default 3.
	MaxRetries int
	// RetryBaseDelay is the first backoff delay. Default 100ms.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps the backoff delay. Default 1s.
	RetryMaxDelay time.Duration
	// ActionQueueSize is the loop queue depth at which a warning is logged.
	// Default 256.
	ActionQueueSize int
	// ActionQueueMaxSize is the loop queue's hard capacity; operations past
	// it are refused with a limit error. Default 1024.
	ActionQueueMaxSize int
	// MonitorBuffer is the event capacity of each subscription; a
	// subscriber whose buffer is full loses events. Default 64.
	MonitorBuffer int
	// MaxGroups caps the number of distinct groups; 0 means unlimited.
	MaxGroups int
	// MaxMembersPerGroup caps the members of one group, counting every
	// join of a process; 0 means unlimited.
	MaxMembersPerGroup int
}

// DefaultSpec returns the spec of an entry that sets no field.
func DefaultSpec() Spec {
	return Spec{
		ProtocolTimeout:         5 * time.Second,
		BroadcastTimeout:        5 * time.Second,
		AntiEntropyInterval:     30 * time.Second,
		CircuitBreakerFailures:  3,
		CircuitBreakerResetTime: 10 * time.Second,
		MaxRetries:              3,
		RetryBaseDelay:          100 * time.Millisecond,
		RetryMaxDelay:           time.Second,
		ActionQueueSize:         256,
		ActionQueueMaxSize:      1024,
		MonitorBuffer:           64,
	}
}

// Upper bounds of a scope's counts and sizes, checked when the entry is
// validated (runner --limit pg.scope.FIELD=N overrides them).
const (
	// MaxCircuitBreakerFailures bounds circuit_breaker_failures.
	MaxCircuitBreakerFailures = 1000
	// MaxRetries bounds max_retries.
	MaxRetries = 100
	// MaxActionQueue bounds action_queue_size and action_queue_max_size:
	// every queued operation holds memory until the loop runs it.
	MaxActionQueue = 1_000_000
	// MaxMonitorBuffer bounds monitor_buffer, allocated whole for every
	// subscription.
	MaxMonitorBuffer = 65_536
	// MaxGroupsLimit bounds max_groups and max_members_per_group.
	MaxGroupsLimit = 10_000_000
)

var _ registry.Bounded = Kind{}

// Bounds implements registry.Bounded.
func (Kind) Bounds() []registry.Bound {
	return []registry.Bound{
		{Field: "circuit_breaker_failures", Max: MaxCircuitBreakerFailures},
		{Field: "max_retries", Max: MaxRetries},
		{Field: "action_queue_size", Max: MaxActionQueue},
		{Field: "action_queue_max_size", Max: MaxActionQueue},
		{Field: "monitor_buffer", Max: MaxMonitorBuffer},
		{Field: "max_groups", Max: MaxGroupsLimit},
		{Field: "max_members_per_group", Max: MaxGroupsLimit},
	}
}

// Kind implements registry.Kind (and Starter) for pg.scope. The zero value
// starts scopes of this node alone; a Distributor makes them part of a
// cluster.
type Kind struct{ Distributor Distributor }

var (
	_ registry.Kind    = Kind{}
	_ registry.Starter = Kind{}
)

// Name returns "pg.scope".
func (Kind) Name() string { return KindName }

// Decode reads and validates every field of the seed, reporting each problem
// at its field.
func (Kind) Decode(d *registry.Decoder) any {
	def := DefaultSpec()
	s := &Spec{}
	positive := func(field string, v time.Duration) time.Duration {
		if v <= 0 {
			d.Errorf(field, "must be a positive duration, got %s", v)
		}
		return v
	}
	s.ProtocolTimeout = positive("protocol_timeout", d.Duration("protocol_timeout", def.ProtocolTimeout))
	s.BroadcastTimeout = positive("broadcast_timeout", d.Duration("broadcast_timeout", def.BroadcastTimeout))
	s.AntiEntropyInterval = d.Duration("anti_entropy_interval", def.AntiEntropyInterval)
	if s.AntiEntropyInterval < 0 {
		d.Errorf("anti_entropy_interval", "must be 0 (disabled) or a positive duration, got %s", s.AntiEntropyInterval)
	}
	s.CircuitBreakerFailures = d.Count("circuit_breaker_failures", def.CircuitBreakerFailures, MaxCircuitBreakerFailures)
	if s.CircuitBreakerFailures < 1 {
		d.Errorf("circuit_breaker_failures", "must be at least 1, got %d", s.CircuitBreakerFailures)
	}
	s.CircuitBreakerResetTime = positive("circuit_breaker_reset_time", d.Duration("circuit_breaker_reset_time", def.CircuitBreakerResetTime))
	s.MaxRetries = d.Count("max_retries", def.MaxRetries, MaxRetries)
	if s.MaxRetries < 0 {
		d.Errorf("max_retries", "must be 0 (no retries) or more, got %d", s.MaxRetries)
	}
	s.RetryBaseDelay = positive("retry_base_delay", d.Duration("retry_base_delay", def.RetryBaseDelay))
	s.RetryMaxDelay = positive("retry_max_delay", d.Duration("retry_max_delay", def.RetryMaxDelay))
	if s.RetryBaseDelay > 0 && s.RetryMaxDelay > 0 && s.RetryMaxDelay < s.RetryBaseDelay {
		d.Errorf("retry_max_delay", "must not be below retry_base_delay (%s), got %s", s.RetryBaseDelay, s.RetryMaxDelay)
	}
	s.ActionQueueSize = d.Count("action_queue_size", def.ActionQueueSize, MaxActionQueue)
	if s.ActionQueueSize < 1 {
		d.Errorf("action_queue_size", "must be at least 1, got %d", s.ActionQueueSize)
	}
	s.ActionQueueMaxSize = d.Count("action_queue_max_size", def.ActionQueueMaxSize, MaxActionQueue)
	switch {
	case s.ActionQueueMaxSize < 1:
		d.Errorf("action_queue_max_size", "must be at least 1, got %d", s.ActionQueueMaxSize)
	case s.ActionQueueSize >= 1 && s.ActionQueueSize > s.ActionQueueMaxSize:
		d.Errorf("action_queue_size", "must not exceed action_queue_max_size (%d), got %d", s.ActionQueueMaxSize, s.ActionQueueSize)
	}
	s.MonitorBuffer = d.Count("monitor_buffer", def.MonitorBuffer, MaxMonitorBuffer)
	if s.MonitorBuffer < 1 {
		d.Errorf("monitor_buffer", "must be at least 1, got %d", s.MonitorBuffer)
	}
	s.MaxGroups = d.Count("max_groups", def.MaxGroups, MaxGroupsLimit)
	if s.MaxGroups < 0 {
		d.Errorf("max_groups", "must be 0 (unlimited) or more, got %d", s.MaxGroups)
	}
	s.MaxMembersPerGroup = d.Count("max_members_per_group", def.MaxMembersPerGroup, MaxGroupsLimit)
	if s.MaxMembersPerGroup < 0 {
		d.Errorf("max_members_per_group", "must be 0 (unlimited) or more, got %d", s.MaxMembersPerGroup)
	}
	return s
}
