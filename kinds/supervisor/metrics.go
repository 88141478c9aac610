package supervisor

import (
	"errors"
	"sync"

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
	m.restarts = registerVec(r, m.restarts)
	m.escalations = registerVec(r, m.escalations)
	actual, _ := metricsByRegistry.LoadOrStore(r, m)
	return actual.(*supMetrics)
}

func registerVec(r *prometheus.Registry, c *prometheus.CounterVec) *prometheus.CounterVec {
	if err := r.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
	}
	return c
}
