package pgdist

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/promreg"
)

// metrics are the distribution's series, labelled by scope; created once
// per registry and shared by every scope and restart.
type metrics struct {
	sent     *prometheus.CounterVec
	received *prometheus.CounterVec
	failed   *prometheus.CounterVec
	ignored  *prometheus.CounterVec
	peers    *prometheus.GaugeVec
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pg_cluster_messages_sent_total",
			Help: "Protocol messages a pg scope sent to other nodes' scopes, by type (ops, sync, discover, hello).",
		}, []string{"scope", "type"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pg_cluster_messages_received_total",
			Help: "Protocol messages a pg scope applied from other nodes' scopes, by type.",
		}, []string{"scope", "type"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pg_cluster_send_failures_total",
			Help: "Sends to another node's scope that failed or that an open circuit breaker skipped.",
		}, []string{"scope"}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pg_cluster_ignored_total",
			Help: "Messages to a pg scope that were dropped: from a process that is not its node's scope (unverified), malformed, or of another protocol version.",
		}, []string{"scope", "reason"}),
		peers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pg_cluster_peers",
			Help: "Other nodes whose scope of this entry this node has verified.",
		}, []string{"scope"}),
	}
	// A second distribution on one registry shares the series.
	m.sent = promreg.Register(reg, m.sent)
	m.received = promreg.Register(reg, m.received)
	m.failed = promreg.Register(reg, m.failed)
	m.ignored = promreg.Register(reg, m.ignored)
	m.peers = promreg.Register(reg, m.peers)
	return m
}

// scopeMetrics are one scope's children of the series.
type scopeMetrics struct {
	sentOps, sentSync, sentDiscover, sentHello prometheus.Counter
	recvOps, recvSync, recvDiscover            prometheus.Counter
	failed                                     prometheus.Counter
	unverified, malformed, version             prometheus.Counter
	peers                                      prometheus.Gauge
}

func (m *metrics) scope(id string) scopeMetrics {
	return scopeMetrics{
		sentOps:      m.sent.WithLabelValues(id, "ops"),
		sentSync:     m.sent.WithLabelValues(id, "sync"),
		sentDiscover: m.sent.WithLabelValues(id, "discover"),
		sentHello:    m.sent.WithLabelValues(id, "hello"),
		recvOps:      m.received.WithLabelValues(id, "ops"),
		recvSync:     m.received.WithLabelValues(id, "sync"),
		recvDiscover: m.received.WithLabelValues(id, "discover"),
		failed:       m.failed.WithLabelValues(id),
		unverified:   m.ignored.WithLabelValues(id, "unverified"),
		malformed:    m.ignored.WithLabelValues(id, "malformed"),
		version:      m.ignored.WithLabelValues(id, "version"),
		peers:        m.peers.WithLabelValues(id),
	}
}

// forget removes the series of scope id (its last replica stopped).
func (m *metrics) forget(id string) {
	for _, t := range []string{"ops", "sync", "discover", "hello"} {
		m.sent.DeleteLabelValues(id, t)
		m.received.DeleteLabelValues(id, t)
	}
	m.failed.DeleteLabelValues(id)
	for _, r := range []string{"unverified", "malformed", "version"} {
		m.ignored.DeleteLabelValues(id, r)
	}
	m.peers.DeleteLabelValues(id)
}
