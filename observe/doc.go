// Package observe is the runner's HTTP endpoint: Prometheus metrics from
// the runtime's own registry, health and readiness probes, and JSON views
// of the entries under /v1. Everything it serves is read from snapshots
// the runtime and the kinds publish; no request waits on an entry's loop.
package observe
