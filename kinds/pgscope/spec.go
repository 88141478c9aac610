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

// Kind implements registry.Kind (and Starter) for pg.scope. A scope is
// part of a cluster through Distributor, or when it is nil through the
// start environment's Env.Cluster when that is a Distributor (as package
// node sets it); with neither, scopes are this node's alone.
type Kind struct{ Distributor Distributor }

var (
	_ registry.Kind    = Kind{}
	_ registry.Starter = Kind{}
)

// Name returns "pg.scope".
func (Kind) Name() string { return KindName }

// The fields of a scope; their defaults are DefaultSpec's.
var (
	defaultSpec = DefaultSpec()

	fProtocolTimeout = registry.DurationField("protocol_timeout", defaultSpec.ProtocolTimeout,
		"Bounds inter-node sync and discover operations, and a caller's wait for the scope's loop.").Positive()
	fBroadcastTimeout = registry.DurationField("broadcast_timeout", defaultSpec.BroadcastTimeout,
		"Bounds the delivery of a broadcast to one member.").Positive()
	fAntiEntropyInterval = registry.DurationField("anti_entropy_interval", defaultSpec.AntiEntropyInterval,
		"Period of the reconcile loop that pushes a full sync to one peer per tick; 0 disables it.").NonNegative("disabled")
	fCircuitBreakerFailures = registry.IntField("circuit_breaker_failures", defaultSpec.CircuitBreakerFailures, MaxCircuitBreakerFailures,
		"Consecutive send failures to a node that open its circuit.").AtLeast(1, "")
	fCircuitBreakerResetTime = registry.DurationField("circuit_breaker_reset_time", defaultSpec.CircuitBreakerResetTime,
		"How long an open circuit waits before a half-open probe.").Positive()
	fMaxRetries = registry.IntField("max_retries", defaultSpec.MaxRetries, MaxRetries,
		"How often a failed join/leave fan-out is retried; 0 disables retries.").AtLeast(0, "no retries")
	fRetryBaseDelay  = registry.DurationField("retry_base_delay", defaultSpec.RetryBaseDelay, "The first retry backoff delay.").Positive()
	fRetryMaxDelay   = registry.DurationField("retry_max_delay", defaultSpec.RetryMaxDelay, "The longest retry backoff delay.").Positive()
	fActionQueueSize = registry.IntField("action_queue_size", defaultSpec.ActionQueueSize, MaxActionQueue,
		"Depth of the scope's queue at which a warning is logged.").AtLeast(1, "")
	fActionQueueMaxSize = registry.IntField("action_queue_max_size", defaultSpec.ActionQueueMaxSize, MaxActionQueue,
		"Capacity of the scope's queue; operations past it are refused with a limit error.").AtLeast(1, "")
	fMonitorBuffer = registry.IntField("monitor_buffer", defaultSpec.MonitorBuffer, MaxMonitorBuffer,
		"Events one subscription buffers; a subscriber whose buffer is full loses events.").AtLeast(1, "")
	fMaxGroups = registry.IntField("max_groups", defaultSpec.MaxGroups, MaxGroupsLimit,
		"The most distinct groups; 0 is unlimited.").AtLeast(0, "unlimited")
	fMaxMembersPerGroup = registry.IntField("max_members_per_group", defaultSpec.MaxMembersPerGroup, MaxGroupsLimit,
		"The most members of one group, counting every join; 0 is unlimited.").AtLeast(0, "unlimited")

	scopeFields = []*registry.Field{
		fProtocolTimeout, fBroadcastTimeout, fAntiEntropyInterval, fCircuitBreakerFailures, fCircuitBreakerResetTime,
		fMaxRetries, fRetryBaseDelay, fRetryMaxDelay, fActionQueueSize, fActionQueueMaxSize, fMonitorBuffer,
		fMaxGroups, fMaxMembersPerGroup,
	}
)

var _ registry.Declared = Kind{}

// Fields implements registry.Declared.
func (Kind) Fields() []*registry.Field { return scopeFields }

// Decode reads and validates every field of the seed, reporting each problem
// at its field.
func (Kind) Decode(d *registry.Decoder) any {
	s := &Spec{
		ProtocolTimeout:         fProtocolTimeout.Duration(d),
		BroadcastTimeout:        fBroadcastTimeout.Duration(d),
		AntiEntropyInterval:     fAntiEntropyInterval.Duration(d),
		CircuitBreakerFailures:  fCircuitBreakerFailures.Int(d),
		CircuitBreakerResetTime: fCircuitBreakerResetTime.Duration(d),
		MaxRetries:              fMaxRetries.Int(d),
		RetryBaseDelay:          fRetryBaseDelay.Duration(d),
		RetryMaxDelay:           fRetryMaxDelay.Duration(d),
		ActionQueueSize:         fActionQueueSize.Int(d),
		ActionQueueMaxSize:      fActionQueueMaxSize.Int(d),
		MonitorBuffer:           fMonitorBuffer.Int(d),
		MaxGroups:               fMaxGroups.Int(d),
		MaxMembersPerGroup:      fMaxMembersPerGroup.Int(d),
	}
	if s.RetryBaseDelay > 0 && s.RetryMaxDelay > 0 && s.RetryMaxDelay < s.RetryBaseDelay {
		d.Errorf("retry_max_delay", "must not be below retry_base_delay (%s), got %s", s.RetryBaseDelay, s.RetryMaxDelay)
	}
	if s.ActionQueueSize >= 1 && s.ActionQueueMaxSize >= 1 && s.ActionQueueSize > s.ActionQueueMaxSize {
		d.Errorf("action_queue_size", "must not exceed action_queue_max_size (%d), got %d", s.ActionQueueMaxSize, s.ActionQueueSize)
	}
	return s
}
