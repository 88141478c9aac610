package testutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricValue reads the series of metric name on reg whose labels include
// labels: a counter's or a gauge's value, a histogram's count. It is 0
// when no such series exists.
func MetricValue(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	v, _ := MetricSeries(t, reg, name, labels)
	return v
}

// MetricSeries is MetricValue that also reports whether the series exists
// (a metric that must be there at zero from the start).
func MetricSeries(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}
