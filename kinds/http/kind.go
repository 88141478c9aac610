package http

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/kinds/pool"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// ServerKind is the http.server kind. The zero value is ready to register.
type ServerKind struct{}

// RouteKind is the http.route kind. The zero value is ready to register.
type RouteKind struct{}

var (
	_ registry.Kind       = ServerKind{}
	_ registry.Declared   = ServerKind{}
	_ registry.Starter    = ServerKind{}
	_ registry.Stopper    = (*Server)(nil)
	_ registry.Updater    = (*Server)(nil)
	_ registry.Viewer     = (*Server)(nil)
	_ registry.Kind       = RouteKind{}
	_ registry.Declared   = RouteKind{}
	_ registry.Starter    = RouteKind{}
	_ registry.RefChecker = RouteKind{}
	_ registry.Stopper    = (*Route)(nil)
	_ registry.Updater    = (*Route)(nil)
	_ registry.Viewer     = (*Route)(nil)
)

// Name implements registry.Kind.
func (ServerKind) Name() string { return ServerKindName }

// Fields implements registry.Declared.
func (ServerKind) Fields() []*registry.Field { return serverFields }

// Decode implements registry.Kind: it returns a *ServerSpec.
func (ServerKind) Decode(d *registry.Decoder) any { return decodeServer(d) }

// Start implements registry.Starter.
func (ServerKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	spec, ok := e.Spec.(*ServerSpec)
	if !ok {
		return nil, value.NewError(value.KindInvalid, "http server %s: spec is a %T, not a *http.ServerSpec", e.ID, e.Spec)
	}
	return StartServer(ctx, env, e.ID, spec, opts)
}

// Name implements registry.Kind.
func (RouteKind) Name() string { return RouteKindName }

// Fields implements registry.Declared.
func (RouteKind) Fields() []*registry.Field { return routeFields }

// Decode implements registry.Kind: it returns a *RouteSpec.
func (RouteKind) Decode(d *registry.Decoder) any { return decodeRoute(d) }

// CheckRefs implements registry.RefChecker: a route to a
// supervisor.partition, or to a consistent_hash router.pool or
// router.group, needs a key, the one thing that picks its worker or
// routee (without it every request was a 400). A key given but invalid is
// reported once, by the decoder.
func (RouteKind) CheckRefs(e *registry.Entry, target func(registry.ID) (*registry.Entry, bool), report func(registry.Pos, string, string)) {
	s, ok := e.Spec.(*RouteSpec)
	if !ok || s.Key != nil || s.keyFailed {
		return
	}
	t, ok := target(s.To)
	if !ok {
		return
	}
	var what string
	switch sp := t.Spec.(type) {
	case *pool.Spec:
		if sp.Strategy == pool.ConsistentHash {
			what = "is a consistent_hash router.pool: set key (path.NAME, query.NAME or header.NAME) to pick its routee"
		}
	case *pool.GroupSpec:
		if sp.Strategy == pool.ConsistentHash {
			what = "is a consistent_hash router.group: set key (path.NAME, query.NAME or header.NAME) to pick its routee"
		}
	}
	if t.Kind == partitionKind {
		what = "is a supervisor.partition: set key (path.NAME, query.NAME or header.NAME) to pick its worker"
	}
	if what == "" {
		return
	}
	for _, r := range e.Refs {
		if r.Field == fTo.Name {
			report(r.Pos, fTo.Name, fmt.Sprintf("%s %s", s.To, what))
			return
		}
	}
}

// CheckSet implements registry.SetChecker: the routes of one server
// whose patterns conflict (neither more specific) are refused at
// validation, at the path of the one a server would refuse as it starts
// it (the later in ID order), rather than when it starts.
func (RouteKind) CheckSet(entries []*registry.Entry, report func(*registry.Entry, registry.Pos, string, string)) {
	tables := map[registry.ID]*table{} // by server; entries come by ID, as buildTable adds them
	for _, e := range entries {
		s, ok := e.Spec.(*RouteSpec)
		if !ok || s.Path == "" || s.badPath {
			continue
		}
		t := tables[s.Server]
		if t == nil {
			t = newTable()
			tables[s.Server] = t
		}
		if err := t.add(&route{id: e.ID, spec: s}); err != nil {
			pos := s.pathAt
			if pos.Line == 0 {
				pos = e.Pos
			}
			report(e, pos, fPath.Name, err.Message)
		}
	}
}

// Start implements registry.Starter: the route joins its server's table.
func (RouteKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	spec, ok := e.Spec.(*RouteSpec)
	if !ok {
		return nil, value.NewError(value.KindInvalid, "http route %s: spec is a %T, not a *http.RouteSpec", e.ID, e.Spec)
	}
	return StartRoute(ctx, env, e.ID, spec, opts)
}

// Route is a running http.route entry: a process that stands for it
// (it exits when its server does, so the root supervisor starts it
// again on the server that replaces it) and its place in the server's
// table.
type Route struct {
	id     registry.ID
	server *Server
	node   *process.Node
	pid    process.PID
}

// StartRoute adds the route to its server, which must be running.
func StartRoute(ctx context.Context, env *registry.Env, id registry.ID, spec *RouteSpec, opts registry.StartOptions) (*Route, error) {
	srv, err := registry.Find[*Server](env, "http server", string(spec.Server), ServerKindName)
	if err != nil {
		return nil, fmt.Errorf("http route %s: %w", id, err)
	}
	rt := &Route{id: id, server: srv, node: env.Node}
	pid, err := env.Node.Spawn(routeProc{}, process.SpawnOptions{System: true, MonitorBy: opts.MonitorBy})
	if err != nil {
		return nil, fmt.Errorf("http route %s: spawn: %w", id, err)
	}
	rt.pid = pid
	// A failed start drops the supervisor's monitor before it stops the
	// process: the error tells of it (registry.StartOptions).
	fail := func(err error) (*Route, error) {
		if !opts.MonitorBy.IsZero() {
			env.Node.Demonitor(opts.MonitorBy, pid)
		}
		_, _ = env.Node.Stop(ctx, pid)
		return nil, fmt.Errorf("http route %s: %w", id, err)
	}
	// The route is set before its process monitors the server: a server
	// already gone sends that monitor its DOWN at once, and the process
	// would end with it (an EXIT to MonitorBy) while the start failed
	// and its Demonitor had not come yet. Set first, a server gone fails
	// setRoute, and one gone after it ends a route that has started.
	if err := srv.setRoute(ctx, id, spec); err != nil {
		return fail(err)
	}
	if err := env.Node.Monitor(pid, srv.PID()); err != nil {
		_, _ = srv.removeRoute(ctx, id)
		return fail(err)
	}
	return rt, nil
}

// PID implements registry.Instance.
func (r *Route) PID() process.PID { return r.pid }

// Update applies a changed route on its next request; a route moved to
// another server restarts (false).
func (r *Route) Update(ctx context.Context, e *registry.Entry) (bool, error) {
	spec, ok := e.Spec.(*RouteSpec)
	if !ok {
		return false, value.NewError(value.KindInvalid, "http route %s: spec is a %T", e.ID, e.Spec)
	}
	if spec.Server != r.server.id {
		return false, nil
	}
	if err := r.server.setRoute(ctx, r.id, spec); err != nil {
		return false, err
	}
	return true, nil
}

// Stop takes the route out of its server's table, waits for the requests
// it is serving (up to ctx: the entry's stop_timeout), and ends its
// process. The wait is what lets a target that only this route kept
// running (its `to`, started as a reference) outlive the requests sent to
// it: the runtime stops the target after the route.
func (r *Route) Stop(ctx context.Context) error {
	pending, err := r.server.removeRoute(ctx, r.id)
	if errors.Is(err, ErrStopped) {
		err = nil
	}
	if err == nil && pending != nil {
		err = r.drain(ctx, pending)
	}
	if _, serr := r.node.Stop(ctx, r.pid); serr != nil && !errors.Is(serr, process.ErrNoProcess) && err == nil {
		err = serr
	}
	return err
}

// drainPoll is how often Stop looks at the count of a removed route's
// requests: they count themselves out without telling anyone, and a stop
// is rare enough that a few milliseconds' polling costs nothing.
const drainPoll = 5 * time.Millisecond

// drain waits until no request counts in pending, or ctx is done.
func (r *Route) drain(ctx context.Context, pending *atomic.Int64) error {
	if pending.Load() <= 0 {
		return nil
	}
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("http route %s: stopped with %d requests still being served: %w", r.id, pending.Load(), ctx.Err())
		case <-tick.C:
			if pending.Load() <= 0 {
				return nil
			}
		}
	}
}

// routeProc stands for a route; it ends when the server it monitors does.
type routeProc struct{}

func (routeProc) Receive(process.Context, process.Message) {}

func (routeProc) ReceiveEvent(c process.Context, e process.Event) {
	if e.Kind == process.EventExit {
		c.Stop(nil, value.NewError(value.KindStopped, "its http server stopped"))
	}
}
