package pool

import (
	"context"
	"reflect"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// KindName is the kind field of a pool entry.
const KindName = "router.pool"

// Kind is the router.pool kind. The zero value is ready to register.
type Kind struct{}

var (
	_ registry.Kind      = Kind{}
	_ registry.Starter   = Kind{}
	_ registry.Stopper   = (*Pool)(nil)
	_ registry.Updater   = (*Pool)(nil)
	_ registry.Viewer    = (*Pool)(nil)
	_ registry.Refresher = (*Pool)(nil)
)

// Name implements registry.Kind.
func (Kind) Name() string { return KindName }

// Decode implements registry.Kind: it returns a *Spec.
func (Kind) Decode(d *registry.Decoder) any { return decodeSpec(d) }

// Start implements registry.Starter.
func (Kind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	spec, ok := e.Spec.(*Spec)
	if !ok {
		return nil, value.NewError(value.KindInvalid, "pool %s: spec is a %T, not a *pool.Spec", e.ID, e.Spec)
	}
	return Start(ctx, env, e.ID, spec, opts)
}

// Update applies a changed spec in place: size, timeout, interval and the
// resizer. A new routee entry or strategy needs a restart (false).
func (p *Pool) Update(ctx context.Context, e *registry.Entry) (bool, error) {
	ns, ok := e.Spec.(*Spec)
	if !ok {
		return false, value.NewError(value.KindInvalid, "pool %s: spec is a %T, not a *pool.Spec", e.ID, e.Spec)
	}
	if err := ns.check(); err != nil {
		return false, value.NewError(value.KindInvalid, "pool %s: %v", p.id, err)
	}
	var applied bool
	err := p.call(ctx, func() { applied = p.apply(ns) })
	if err != nil {
		return false, err
	}
	return applied, nil
}

// apply runs on the pool's loop.
func (p *Pool) apply(ns *Spec) bool {
	old := p.spec
	if ns.Routee != old.Routee || ns.Strategy != old.Strategy {
		return false
	}
	p.spec = ns
	switch {
	case ns.Resizer == nil:
		p.rz = nil
		if p.tick != nil {
			p.tick.Stop()
			p.tick = nil
		}
	case p.rz == nil || !reflect.DeepEqual(p.rz.spec(), *ns.Resizer):
		nr := newResizer(*ns.Resizer, nil)
		// The performance log stays valid across a change of parameters:
		// it measures the routees, not the resizer.
		if prev, ok := p.rz.(*optimalResizer); ok {
			if next, ok := nr.(*optimalResizer); ok {
				next.perfLog = prev.perfLog
				next.setRecord(prev.rec)
			}
		}
		hadTick := p.rz != nil
		p.rz = nr
		if !hadTick {
			p.armTick()
		}
	}
	p.cfg.Store(&config{strategy: ns.Strategy, timeout: ns.Timeout, interval: ns.Interval, rz: p.rz})
	p.renew()
	if p.rz == nil {
		p.applyDelta(ns.Size-len(p.slots), "update")
	} else if p.resizing.CompareAndSwap(false, true) {
		p.resizeNow()
	}
	p.publishView()
	p.log.Info("pool updated in place", "size", len(p.slots), "timeout", ns.Timeout)
	return true
}

// Refresh implements registry.Refresher: routees that run another
// definition than the routee entry in force (a renewal that failed, or a
// change the pool was not offered) are renewed in place. When every
// routee already runs it (the reload's Update renewed them), the pool's
// process is not called again.
func (p *Pool) Refresh(ctx context.Context) error {
	if on := p.renewedOn.Load(); on != nil && *on == p.routeeDigest() {
		return nil
	}
	return p.call(ctx, p.renew)
}

// Router is what the Lua module (and other Go code) needs of a pool or a
// group router. Find one with
// registry.Find[Router](env, "router", id, KindName, GroupKindName).
type Router interface {
	ID() registry.ID
	PID() process.PID
	Send(m process.Message) error
	AskContext(ctx context.Context, m process.Message, timeout time.Duration) (any, process.PID, error)
	// CallerTimeout is how long a caller that routes its own ask (Send
	// with a reply target) waits for a timeout it was given (see
	// Pool.CallerTimeout).
	CallerTimeout(t time.Duration) time.Duration
	Size() int
	Routees() []string
}

var (
	_ Router = (*Pool)(nil)
	_ Router = (*Group)(nil)
)

var _ registry.Spawner = Kind{}

// Spawns implements registry.Spawner: the most routees the pool runs, its
// size or its resizer's upper bound.
func (Kind) Spawns(spec any) []registry.Spawn {
	s, ok := spec.(*Spec)
	if !ok || s == nil || s.Routee == "" {
		return nil
	}
	n := s.Size
	if s.Resizer != nil {
		n = max(n, s.Resizer.UpperBound)
	}
	return []registry.Spawn{{Field: fRoutee.Name, To: s.Routee, Count: n}}
}
