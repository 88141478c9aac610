package supervisor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/promreg"
)

type supMetrics struct {
	restarts    *prometheus.CounterVec
	escalations *prometheus.CounterVec
}

// newSupMetrics returns the kind's collectors on r. Supervisors are
// started many times (nested trees, restarts by the root): the first one
// registers them and every later one shares them (promreg.Register).
func newSupMetrics(r *prometheus.Registry) *supMetrics {
	return &supMetrics{
		restarts: promreg.Register(r, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "supervisor_restarts_total",
			Help: "Children restarted by a supervisor, per child (bystanders of all_for_one/rest_for_one included).",
		}, []string{"supervisor", "child"})),
		escalations: promreg.Register(r, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "supervisor_escalations_total",
			Help: "Times a supervisor gave up (restart intensity exceeded or an escalate action) and failed to its parent.",
		}, []string{"supervisor"})),
	}
}
