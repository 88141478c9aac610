package pool

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// core is what a pool and a group share: identity, metrics, routing
// (route.go), and the open scatters that a stop must fail.
type core struct {
	what   string // "pool" or "group", for errors
	id     registry.ID
	node   *process.Node
	log    *slog.Logger
	met    *metrics
	routed prometheus.Counter
	pid    process.PID // the router's process; set before Start returns

	rr       atomic.Uint64 // round-robin position
	stopping atomic.Bool
	warned   atomic.Bool  // the caller-timeout warning was logged
	open     sync.Map     // *race -> struct{}: scatters and tail chops not yet resolved
	nOpen    atomic.Int64 // len(open)
	dropped  atomic.Int64 // plain sends dropped by a racing strategy since the last warning
	warnAt   atomic.Int64 // unix nanos of the last such warning
}

// PID is the router's process: messages sent (or asks made) to it are routed.
func (c *core) PID() process.PID { return c.pid }

// ID is the router's entry ID.
func (c *core) ID() registry.ID { return c.id }
