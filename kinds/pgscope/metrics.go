package pgscope

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/promreg"
	"github.com/proctor-run/proctor/registry"
)

// scopeMetrics are one scope's children of the kind's collectors.
type scopeMetrics struct {
	groups, members, queue, subscribers prometheus.Gauge
	joins, leaves, broadcasts, dropped  prometheus.Counter
	delivered, failed, refused          prometheus.Counter
	vecs                                *collectors
	scope                               string
}

// collectors are the kind's metric families on one Prometheus registry,
// registered as one Collector so that every scope reporting there shares
// them (promreg.Register returns the one registered first).
//
// They also record which scope of each entry is the latest: the scopes of
// one entry share its series and its health check, and a scope that stops
// after a newer one of its entry started (a restart that overlapped the
// stop) must leave both to that one. What they share is per registry, so
// the record is kept with it rather than in a process-wide table.
type collectors struct {
	groups, members, queue, subscribers *prometheus.GaugeVec
	joins, leaves, broadcasts, dropped  *prometheus.CounterVec
	deliveries, refused                 *prometheus.CounterVec

	mu     sync.Mutex
	owners map[ownerKey]*Scope // the latest scope of each entry
}

// ownerKey is an entry of one runtime: two runtimes may share a Prometheus
// registry, never an Env.
type ownerKey struct {
	env *registry.Env
	id  registry.ID
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
		owners:      map[ownerKey]*Scope{},
	}
}

func (c *collectors) each(fn func(prometheus.Collector)) {
	for _, v := range []prometheus.Collector{c.groups, c.members, c.queue, c.subscribers,
		c.joins, c.leaves, c.broadcasts, c.dropped, c.deliveries, c.refused} {
		fn(v)
	}
}

// Describe implements prometheus.Collector.
func (c *collectors) Describe(ch chan<- *prometheus.Desc) {
	c.each(func(v prometheus.Collector) { v.Describe(ch) })
}

// Collect implements prometheus.Collector.
func (c *collectors) Collect(ch chan<- prometheus.Metric) {
	c.each(func(v prometheus.Collector) { v.Collect(ch) })
}

// claim makes s the latest scope of its entry.
func (c *collectors) claim(s *Scope) {
	c.mu.Lock()
	c.owners[ownerKey{s.env, s.id}] = s
	c.mu.Unlock()
}

// release forgets s and reports whether it was the latest scope of its
// entry, which then gives up the shared gauges and health check.
func (c *collectors) release(s *Scope) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := ownerKey{s.env, s.id}
	if c.owners[k] != s {
		return false
	}
	delete(c.owners, k)
	return true
}

func newScopeMetrics(reg *prometheus.Registry, scope string) *scopeMetrics {
	c := promreg.Register(reg, newCollectors())
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
