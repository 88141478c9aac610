package http

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/promreg"
)

// metrics follow OpenTelemetry's HTTP server semantic conventions
// (http.server.request.duration, http.server.active_requests) in
// Prometheus form: server is the http.server entry's ID (two servers'
// routes of one pattern are apart), route the route's path pattern
// (http.route), method the request's method (_OTHER for one a route cannot
// name), status the response's status code. A request no route matched
// has route "". The series of a pattern no route of the server uses any
// more are deleted (forget), so reloads do not pile them up.
type metrics struct {
	duration  *prometheus.HistogramVec
	active    *prometheus.GaugeVec
	refused   *prometheus.CounterVec
	oversized *prometheus.CounterVec
	// refusedRequests are the requests a route turned away at max_pending.
	refusedRequests *prometheus.CounterVec
}

// durationBuckets are OpenTelemetry's advice for
// http.server.request.duration, with three below 5 ms, where a request
// served on the node usually lands.
var durationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_server_request_duration_seconds",
			Help:    "Duration of HTTP requests served by http.server entries, by server, route pattern, method and status (OpenTelemetry http.server.request.duration).",
			Buckets: durationBuckets,
		}, []string{"server", "route", "method", "status"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "http_server_active_requests",
			Help: "HTTP requests being served, by server and route pattern (OpenTelemetry http.server.active_requests).",
		}, []string{"server", "route"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_server_refused_connections_total",
			Help: "Connections an http.server turned away at max_connections, none being idle.",
		}, []string{"server"}),
		oversized: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_server_oversized_bodies_total",
			Help: "Requests answered 413 because their body was larger than the server's max_body, by server and route pattern.",
		}, []string{"server", "route"}),
		refusedRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_server_refused_requests_total",
			Help: "Requests answered 429 at once because their route was serving max_pending requests, by server and route pattern.",
		}, []string{"server", "route"}),
	}
	if reg == nil {
		return m
	}
	m.duration = promreg.Register(reg, m.duration)
	m.active = promreg.Register(reg, m.active)
	m.refused = promreg.Register(reg, m.refused)
	m.oversized = promreg.Register(reg, m.oversized)
	m.refusedRequests = promreg.Register(reg, m.refusedRequests)
	return m
}

// forget deletes the series of server's route pattern, which no route of
// the server uses any more.
func (m *metrics) forget(server, pattern string) {
	m.duration.DeletePartialMatch(prometheus.Labels{"server": server, "route": pattern})
	m.active.DeleteLabelValues(server, pattern)
	m.oversized.DeleteLabelValues(server, pattern)
	m.refusedRequests.DeleteLabelValues(server, pattern)
}

// methodLabel bounds the method label: a method no route can name is
// _OTHER, as OpenTelemetry asks.
func methodLabel(m string) string {
	for _, k := range knownMethods {
		if m == k {
			return k
		}
	}
	return "_OTHER"
}

// statusLabels are the status codes as label values, built once.
var statusLabels = func() map[int]string {
	out := make(map[int]string, 500)
	for c := 100; c < 600; c++ {
		out[c] = strconv.Itoa(c)
	}
	return out
}()

func statusLabel(c int) string {
	if s, ok := statusLabels[c]; ok {
		return s
	}
	return "other"
}
