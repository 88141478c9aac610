package supervisor

import (
	"sync"

	"github.com/proctor-run/proctor/registry"
	"github.com/prometheus/client_golang/prometheus"
)

type supMetrics struct {
	restarts    *prometheus.CounterVec
	escalations *prometheus.CounterVec
}

// metricsByRegistry keeps one set of collectors per registry: supervisors
// are started many times (nested trees, restarts by the root) and must not
// fail on AlreadyRegisteredError.
var metricsByRegistry sync.Map // *prometheus.Registry -> *supMetrics

func newSupMetrics() *supMetrics {
	return &supMetrics{
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "supervisor_restarts_total",
			Help: "Children restarted by a supervisor, per child (bystanders of all_for_one/rest_for_one included).",
		}, []string{"supervisor", "child"}),
		escalations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "supervisor_escalations_total",
			Help: "Times a supervisor gave up (restart intensity exceeded or an escalate action) and failed to its parent.",
		}, []string{"supervisor"}),
	}
}

func metricsFor(r *prometheus.Registry) *supMetrics {
	if r == nil {
		return newSupMetrics()
	}
	if m, ok := metricsByRegistry.Load(r); ok {
		return m.(*supMetrics)
	}
	m := newSupMetrics()
	m.restarts = registry.RegisterCollector(r, m.restarts)
	m.escalations = registry.RegisterCollector(r, m.escalations)
	actual, _ := metricsByRegistry.LoadOrStore(r, m)
	return actual.(*supMetrics)
}
