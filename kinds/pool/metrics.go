package pool

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/promreg"
)

// Outcomes of a scatter (and of a tail chop), the values of the outcome
// label of router_scatter_gather_resolved_total.
const (
	OutcomeFirst         = "first"
	OutcomeTimeout       = "timeout"
	OutcomeAllFailed     = "all-failed"
	OutcomeStopped       = "stopped"
	OutcomeNoReplyTarget = "no-reply-target"
)

// metrics are the kind's collectors on one registry. The two scatter
// families carry no pool label, by the seed's design: series of several
// pools aggregate, and log lines (which carry the entry ID) tell them apart.
type metrics struct {
	resolved *prometheus.CounterVec
	latency  prometheus.Histogram
	routed   *prometheus.CounterVec
	routees  *prometheus.GaugeVec
	resizes  *prometheus.CounterVec
	restarts *prometheus.CounterVec
	renewals *prometheus.CounterVec
	// renewalFailures counts routees a reload could not renew: the new
	// code did not start, and the slot kept its routee on the old one.
	// Each slot counts once per definition, however often it is retried.
	renewalFailures *prometheus.CounterVec
}

// latencyBuckets reach down to 100µs: a hedged read is usually fast.
var latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		resolved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_scatter_gather_resolved_total",
			Help: "Scatters (and tail chops) resolved, by outcome: first, timeout, all-failed, stopped, no-reply-target.",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "router_scatter_gather_latency_seconds",
			Help:    "Time from scatter to the answer sent to the caller, for every scatter that ran.",
			Buckets: latencyBuckets,
		}),
		routed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_pool_messages_routed_total",
			Help: "Messages routed by a pool, by pool and strategy.",
		}, []string{"pool", "strategy"}),
		routees: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "router_pool_routees",
			Help: "Routees a pool currently routes to.",
		}, []string{"pool"}),
		resizes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_pool_resizes_total",
			Help: "Resizes applied by a pool's resizer, by direction (up, down).",
		}, []string{"pool", "direction"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_pool_routee_restarts_total",
			Help: "Routees restarted in place after they exited.",
		}, []string{"pool"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_pool_routee_renewals_total",
			Help: "Routees replaced because a reload changed the routee entry.",
		}, []string{"pool"}),
		renewalFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_pool_routee_renewal_failures_total",
			Help: "Routees a reload could not renew because the new routee did not start (once per slot and definition); the slot keeps its routee on the old code.",
		}, []string{"pool"}),
	}
	if reg == nil {
		return m
	}
	m.resolved = promreg.Register(reg, m.resolved)
	m.latency = promreg.Register(reg, m.latency)
	m.routed = promreg.Register(reg, m.routed)
	m.routees = promreg.Register(reg, m.routees)
	m.resizes = promreg.Register(reg, m.resizes)
	m.restarts = promreg.Register(reg, m.restarts)
	m.renewals = promreg.Register(reg, m.renewals)
	m.renewalFailures = promreg.Register(reg, m.renewalFailures)
	return m
}
