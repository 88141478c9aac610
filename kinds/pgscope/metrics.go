package pgscope

import (
	"github.com/proctor-run/proctor/registry"
	"github.com/prometheus/client_golang/prometheus"
)

// scopeMetrics are one scope's children of the kind's collectors.
type scopeMetrics struct {
	groups, members, queue, subscribers prometheus.Gauge
	joins, leaves, broadcasts, dropped  prometheus.Counter
	delivered, failed, refused          prometheus.Counter
	vecs                                *collectors
	scope                               string
}

type collectors struct {
	groups, members, queue, subscribers *prometheus.GaugeVec
	joins, leaves, broadcasts, dropped  *prometheus.CounterVec
	deliveries, refused                 *prometheus.CounterVec
}

func newCollectors() *collectors {
	g := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"scope"})
	}
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"scope"}, labels...))
	}
	return &collectors{
		groups:      g("pg_groups", "Groups with at least one member."),
		members:     g("pg_members", "Memberships over every group and node, counting each join."),
		queue:       g("pg_action_queue_depth", "Commands waiting in the scope's loop."),
		subscribers: g("pg_subscribers", "Open monitor and events subscriptions."),
		joins:       c("pg_joins_total", "Local memberships added (one per join of a process to a group)."),
		leaves:      c("pg_leaves_total", "Local memberships removed, by leave or by the member's exit."),
		broadcasts:  c("pg_broadcasts_total", "Broadcasts and local broadcasts sent."),
		dropped:     c("pg_monitor_dropped_total", "Events lost because a subscriber's monitor_buffer was full."),
		deliveries:  c("pg_broadcast_deliveries_total", "Broadcast copies by outcome.", "result"),
		refused:     c("pg_action_queue_refused_total", "Operations refused because the loop queue was at action_queue_max_size."),
	}
}

func newScopeMetrics(reg *prometheus.Registry, scope string) *scopeMetrics {
	c := newCollectors()
	c.groups = registry.RegisterCollector(reg, c.groups)
	c.members = registry.RegisterCollector(reg, c.members)
	c.queue = registry.RegisterCollector(reg, c.queue)
	c.subscribers = registry.RegisterCollector(reg, c.subscribers)
	c.joins = registry.RegisterCollector(reg, c.joins)
	c.leaves = registry.RegisterCollector(reg, c.leaves)
	c.broadcasts = registry.RegisterCollector(reg, c.broadcasts)
	c.dropped = registry.RegisterCollector(reg, c.dropped)
	c.deliveries = registry.RegisterCollector(reg, c.deliveries)
	c.refused = registry.RegisterCollector(reg, c.refused)
	m := &scopeMetrics{vecs: c, scope: scope}
	m.groups = c.groups.WithLabelValues(scope)
	m.members = c.members.WithLabelValues(scope)
	m.queue = c.queue.WithLabelValues(scope)
	m.subscribers = c.subscribers.WithLabelValues(scope)
	m.joins = c.joins.WithLabelValues(scope)
	m.leaves = c.leaves.WithLabelValues(scope)
	m.broadcasts = c.broadcasts.WithLabelValues(scope)
	m.dropped = c.dropped.WithLabelValues(scope)
	m.delivered = c.deliveries.WithLabelValues(scope, "ok")
	m.failed = c.deliveries.WithLabelValues(scope, "failed")
	m.refused = c.refused.WithLabelValues(scope)
	m.groups.Set(0)
	m.members.Set(0)
	m.subscribers.Set(0)
	m.queue.Set(0)
	return m
}

// reset zeroes the gauges of a stopped scope; counters keep their totals.
func (m *scopeMetrics) reset() {
	m.groups.Set(0)
	m.members.Set(0)
	m.subscribers.Set(0)
	m.queue.Set(0)
}
