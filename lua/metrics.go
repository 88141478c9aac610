package lua

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/promreg"
	"github.com/proctor-run/proctor/registry"
)

// registerMetrics exports the node's count of abandoned processes (see
// process.Node.Abandoned) on env's metrics registry, once per registry.
// They are the node's, not only Lua's, but only a Lua process can get stuck
// in a long Go call (a builtin), so this kind is the one that exports them.
func (h *Host) registerMetrics(env *registry.Env) {
	if env == nil || env.Metrics == nil || env.Node == nil || h.metrics.Load() == env.Metrics {
		return
	}
	h.metrics.Store(env.Metrics)
	node := env.Node
	promreg.Register(env.Metrics, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "runner_processes_abandoned_total",
		Help: "Processes killed past their stop deadline whose goroutine had still not returned a while later (each is also logged).",
	}, func() float64 { return float64(node.Abandoned().Total) }))
	promreg.Register(env.Metrics, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "runner_processes_abandoned_running",
		Help: "Goroutines of abandoned processes that still run.",
	}, func() float64 { return float64(node.Abandoned().Running) }))
}
