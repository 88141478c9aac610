package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it; when an equal
// collector is registered there already (an entry restarted, a second
// entry of the same kind, two runtimes sharing a registry) it returns that
// one instead, so the series are shared rather than refused. A nil reg
// returns c unregistered. Any other registration error is a programming
// error (two definitions of one metric) and panics, as MustRegister does.
func Register[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
		return c
	}
	panic(err)
}
