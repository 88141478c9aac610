package http

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	nethttp "net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// ErrStopped: the server is stopping or stopped.
var ErrStopped = value.Sentinel("http.stopped", value.KindStopped, "http server stopped")

// Server is a running http.server entry. Its loop owns the routes and the
// listeners; handlers read the route table and the spec it publishes.
type Server struct {
	id   registry.ID
	env  *registry.Env
	node *process.Node
	log  *slog.Logger
	m    *metrics
	pid  process.PID
	loop *process.Loop
	stop context.CancelFunc

	spec  atomic.Pointer[ServerSpec]
	table atomic.Pointer[table]
	addr  atomic.Pointer[string] // the address bound, for views and tests
	bound atomic.Pointer[binding]
	// sending counts the bytes of large reply bodies being sent (see
	// holdReply).
	sending  atomic.Int64
	halted   chan struct{}
	haltOnce sync.Once

	// Owned by the loop.
	routes  map[registry.ID]*route
	cur     *serving
	certs   *certs
	drained sync.WaitGroup // servers a change replaced, finishing their requests
}

// serving is one http.Server on a binding, accepting through v.
type serving struct {
	b    *binding
	v    *view
	srv  *nethttp.Server
	done chan struct{}
	// retired is set when a change has replaced the server: its
	// responses close their connections (see servingHandler).
	retired atomic.Bool
}

// servingHandler serves the requests of one http.Server. Once a change
// has replaced that server, each response says Connection: close, so a
// keep-alive client in the middle of its requests reconnects (to the new
// server) after a response, instead of having its connection closed
// under the next request it is sending, which is what Shutdown does to a
// connection idle between two requests (wrk counts a read error, and a
// client does not retry a POST). (A reply refused as no response clears
// the headers, this one too: that connection is closed as idle.)
type servingHandler struct {
	s  *Server
	sv *serving
}

func (h servingHandler) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	if h.sv.retired.Load() {
		w.Header().Set("Connection", "close")
	}
	h.s.ServeHTTP(w, r)
}

// retireLinger is how long a replaced server keeps its idle keep-alive
// connections before its Shutdown closes them: a busy client's next
// request comes well within it and is answered with Connection: close.
// Bounded by the server's stop_timeout; a stop of the server ends it.
const retireLinger = 500 * time.Millisecond

// StartServer binds spec.Listen and serves; the routes come as they
// start. A taken address fails the start.
func StartServer(ctx context.Context, env *registry.Env, id registry.ID, spec *ServerSpec, opts registry.StartOptions) (*Server, error) {
	s := &Server{id: id, env: env, node: env.Node, log: env.EntryLogger(id), m: newMetrics(env.Metrics),
		routes: map[registry.ID]*route{}, halted: make(chan struct{})}
	s.spec.Store(spec)
	s.table.Store(emptyTable)
	s.m.refused.WithLabelValues(string(id)) // its series from the start, at 0
	if spec.TLS != nil {
		c, err := loadCerts(*spec.TLS, s.log)
		if err != nil {
			return nil, value.Wrap(value.FromError(at(spec.tlsAt, value.NewError(value.KindInvalid, "%v", err))), fmt.Sprintf("http server %s", id), nil)
		}
		s.certs = c
	}
	sv, err := s.serve(spec, nil)
	if err != nil {
		return nil, value.Wrap(value.FromError(at(spec.listenAt, err)), fmt.Sprintf("http server %s", id), nil)
	}
	s.cur = sv
	s.loop = process.NewLoop(process.LoopOptions{})
	lctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go s.loop.Run(lctx)
	pid, err := env.Node.Spawn(serverProc{s}, process.SpawnOptions{System: true, MonitorBy: opts.MonitorBy})
	if err != nil {
		s.halt()
		return nil, fmt.Errorf("http server %s: spawn: %w", id, err)
	}
	s.pid = pid
	// The server's process stands for the entry: it stops with it.
	if !env.Node.AfterExit(pid, s.halt, s.halted) {
		s.halt()
		return nil, fmt.Errorf("http server %s: its process exited at start: %w", id, ErrStopped)
	}
	s.log.Info("http server listening", "addr", *s.addr.Load(), "tls", spec.TLS != nil)
	return s, nil
}

// serve starts an http.Server for spec, on a new binding or on keep.
func (s *Server) serve(spec *ServerSpec, keep *binding) (*serving, error) {
	b := keep
	if b == nil {
		var err error
		b, err = bind(spec.Listen, spec.MaxConnections,
			func() { s.m.refused.WithLabelValues(string(s.id)).Inc() },
			func() bool { return s.spec.Load().TLS == nil })
		if err != nil {
			return nil, err
		}
	}
	sv := &serving{b: b, done: make(chan struct{})}
	srv := &nethttp.Server{
		Handler:           servingHandler{s: s, sv: sv},
		ReadHeaderTimeout: spec.ReadHeaderTimeout,
		ReadTimeout:       spec.ReadTimeout,
		WriteTimeout:      spec.WriteTimeout,
		IdleTimeout:       spec.IdleTimeout,
		MaxHeaderBytes:    spec.MaxHeaderBytes,
		ConnState:         connState(b.lim.ConnState),
		// HTTP/1.1 only, said outright (the TLS config offers only
		// http/1.1 too): one request at a time on a connection, so the
		// requests in flight are bounded by max_connections and each
		// route's max_pending. HTTP/2 would let each connection carry
		// many streams (Go's default is 250 each).
		Protocols: http1Only,
		// What hostile clients make the server say (bad handshakes,
		// broken requests) is not worth a warning each.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	v := newView(b)
	var ln net.Listener = v
	if spec.TLS != nil {
		// Deadlines under TLS too: tls.Conn sets the connection's own.
		ln = tls.NewListener(deadlineListener{ln}, s.certs.config())
	} else {
		// net/http's own answers go out in JSON (protoerr.go).
		ln = errorListener{Listener: ln, maxHeaderBytes: spec.MaxHeaderBytes}
		srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		}
	}
	sv.v, sv.srv = v, srv
	go func() {
		defer close(sv.done)
		_ = srv.Serve(ln)
	}()
	addr := b.Addr().String()
	s.addr.Store(&addr)
	s.bound.Store(b)
	return sv, nil
}

// http1Only is the servers' Protocols: HTTP/1 alone, no HTTP/2 over TLS
// and no unencrypted HTTP/2.
var http1Only = func() *nethttp.Protocols {
	p := new(nethttp.Protocols)
	p.SetHTTP1(true)
	return p
}()

// Addr returns the address the server is bound to.
func (s *Server) Addr() string { return *s.addr.Load() }

// ID returns the server's entry ID.
func (s *Server) ID() registry.ID { return s.id }

// PID implements registry.Instance.
func (s *Server) PID() process.PID { return s.pid }

func (s *Server) call(ctx context.Context, fn func() error) error {
	return process.RunOnAs(ctx, s.loop, process.CommandFunc(fn), process.CallOptions{},
		process.CallErrors{What: "http server " + string(s.id), Stopped: ErrStopped})
}

// Update applies a changed spec without a gap: the routes stay; a new
// http.Server takes the new timeouts and limits, on the same socket when
// listen is unchanged, else on a new one bound first; the one it
// replaces finishes its requests. max_connections changes the socket's
// limiter in place: a change of it alone keeps the http.Server and every
// connection.
func (s *Server) Update(ctx context.Context, e *registry.Entry) (bool, error) {
	ns, ok := e.Spec.(*ServerSpec)
	if !ok {
		return false, value.NewError(value.KindInvalid, "http server %s: spec is a %T", e.ID, e.Spec)
	}
	applied := false
	err := s.call(ctx, func() error {
		old := s.spec.Load()
		if s.cur == nil {
			return ErrStopped
		}
		sameAddr := ns.Listen == old.Listen
		if sameAddr && ns.MaxConnections != old.MaxConnections {
			s.cur.b.lim.SetMax(ns.MaxConnections)
		}
		if sameAddr && onlyLimit(old, ns) {
			s.spec.Store(ns)
			applied = true
			s.log.Info("http server limits changed in place", "max_connections", ns.MaxConnections, "max_reply_bytes", ns.maxReplyBytes())
			return nil
		}
		if ns.TLS != nil && (old.TLS == nil || *ns.TLS != *old.TLS) {
			c, err := loadCerts(*ns.TLS, s.log)
			if err != nil {
				return at(ns.tlsAt, value.NewError(value.KindInvalid, "%v", err))
			}
			s.certs = c
		}
		var keep *binding
		if sameAddr {
			keep = s.cur.b
		}
		sv, err := s.serve(ns, keep)
		if err != nil {
			return at(ns.listenAt, err)
		}
		prev := s.cur
		s.cur = sv
		s.spec.Store(ns)
		s.retire(prev, !sameAddr, s.env.StopTimeout(e))
		applied = true
		s.log.Info("http server updated in place", "addr", s.Addr(), "rebound", !sameAddr, "tls", ns.TLS != nil)
		return nil
	})
	return applied, err
}

// onlyLimit says whether a and b differ in nothing but max_connections
// and max_reply_bytes (read for each reply).
func onlyLimit(a, b *ServerSpec) bool {
	x, y := *a, *b
	x.MaxConnections, y.MaxConnections = 0, 0
	x.MaxReplyBytes, y.MaxReplyBytes = 0, 0
	x.TLS, y.TLS = nil, nil
	x.listenAt, y.listenAt, x.tlsAt, y.tlsAt = registry.Pos{}, registry.Pos{}, registry.Pos{}, registry.Pos{}
	return x == y && (a.TLS == nil) == (b.TLS == nil) && (a.TLS == nil || *a.TLS == *b.TLS)
}

// retire stops sv accepting (and its binding, when closeBinding) and lets
// its requests finish within grace; on the loop.
func (s *Server) retire(sv *serving, closeBinding bool, grace time.Duration) {
	// Stop it accepting now, not when its Shutdown runs: a connection
	// made after the change is the new server's (a plain request must
	// not reach a server that still speaks TLS).
	sv.v.Close()
	if closeBinding {
		sv.b.close()
	}
	sv.retired.Store(true)
	s.drained.Add(1)
	go func() {
		defer s.drained.Done()
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		linger := time.NewTimer(min(retireLinger, grace/2))
		select {
		case <-linger.C:
		case <-s.halted:
			linger.Stop()
		}
		if err := sv.srv.Shutdown(ctx); err != nil {
			sv.srv.Close()
		}
		<-sv.done
	}()
}

// Stop stops accepting, waits for the requests in flight until ctx ends
// (the entry's stop_timeout), closes what is left and ends the server.
func (s *Server) Stop(ctx context.Context) error {
	var sv *serving
	_ = s.call(ctx, func() error {
		sv, s.cur = s.cur, nil
		return nil
	})
	var err error
	if sv != nil {
		sv.b.close()
		if serr := sv.srv.Shutdown(ctx); serr != nil {
			sv.srv.Close()
			err = fmt.Errorf("http server %s: requests still in flight at the stop deadline were cut: %w", s.id, serr)
		}
		<-sv.done
	}
	if _, serr := s.node.Stop(ctx, s.pid); serr != nil && !errors.Is(serr, process.ErrNoProcess) && err == nil {
		err = serr
	}
	s.halt()
	return err
}

// halt closes whatever still serves, at once, and ends the loop.
func (s *Server) halt() {
	s.haltOnce.Do(func() {
		close(s.halted)
		if s.loop == nil {
			if s.cur != nil {
				s.cur.b.close()
				s.cur.srv.Close()
				<-s.cur.done
			}
			return
		}
		_ = s.call(context.Background(), func() error {
			if sv := s.cur; sv != nil {
				s.cur = nil
				sv.b.close()
				sv.srv.Close()
				<-sv.done
			}
			return nil
		})
		s.drained.Wait()
		s.stop()
		<-s.loop.Done()
	})
}

// setRoute adds or replaces the route id; it fails when its patterns
// conflict with another route's.
func (s *Server) setRoute(ctx context.Context, id registry.ID, spec *RouteSpec) error {
	return s.call(ctx, func() error {
		next := maps(s.routes)
		prev := s.routes[id]
		rt := &route{id: id, spec: spec, s: s}
		if prev != nil && prev.spec.Path == spec.Path {
			// The same series: no label lookups for the new route.
			rt.oversized, rt.active, rt.refused = prev.oversized, prev.active, prev.refused
			rt.obs.Store(prev.obs.Load())
		}
		if prev != nil {
			// Its requests in flight count against the new max_pending.
			rt.pending = prev.pending
		}
		rt.init()
		next[id] = rt
		if err := s.setRoutes(next); err != nil {
			return err
		}
		if prev != nil && prev.spec.Path != spec.Path {
			s.forgetUnused(prev.spec.Path)
		}
		return nil
	})
}

// forgetUnused deletes the metric series of pattern when no route of the
// server uses it any more.
func (s *Server) forgetUnused(pattern string) {
	for _, rt := range s.routes {
		if rt.spec.Path == pattern {
			return
		}
	}
	s.m.forget(string(s.id), pattern)
}

// setRoutes makes next the routes in force and publishes their table, on
// the server's loop; a table that cannot be built changes nothing.
func (s *Server) setRoutes(next map[registry.ID]*route) error {
	t, err := buildTable(next)
	if err != nil {
		return err
	}
	s.routes = next
	s.table.Store(t)
	return nil
}

// removeRoute drops the route id and returns the count of its requests
// still being served (nil when the server had no such route), which the
// requests that matched it before count down.
func (s *Server) removeRoute(ctx context.Context, id registry.ID) (*atomic.Int64, error) {
	var pending *atomic.Int64
	err := s.call(ctx, func() error {
		prev, ok := s.routes[id]
		if !ok {
			return nil
		}
		next := maps(s.routes)
		delete(next, id)
		if err := s.setRoutes(next); err != nil {
			return err
		}
		pending = prev.pending
		s.forgetUnused(prev.spec.Path)
		return nil
	})
	return pending, err
}

func maps(m map[registry.ID]*route) map[registry.ID]*route {
	out := make(map[registry.ID]*route, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// table is an immutable route table: a ServeMux of the routes' patterns.
type table struct {
	mux    *nethttp.ServeMux
	routes []*route               // by ID
	owner  map[string]registry.ID // pattern → the route that registered it
}

var registeredAt = regexp.MustCompile(` \(registered at [^)]*\)`)

// conflictsWith finds the other pattern in the mux's conflict message.
var conflictsWith = regexp.MustCompile(`conflicts with pattern "([^"]*)"`)

var emptyTable = newTable()

// buildTable makes the table of routes; a pattern that conflicts with
// another route's is an invalid error naming both.
func buildTable(routes map[registry.ID]*route) (*table, error) {
	t := newTable()
	ids := make([]registry.ID, 0, len(routes))
	for id := range routes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := t.add(routes[id]); err != nil {
			return nil, value.NewError(value.KindInvalid, "route %s: %s", id, err.Message)
		}
	}
	return t, nil
}

func newTable() *table { return &table{mux: nethttp.NewServeMux(), owner: map[string]registry.ID{}} }

// add puts rt's patterns in the table; one that conflicts with another
// route's is an invalid error naming both (the patterns before it stay:
// the mux refuses a pattern before it changes anything).
func (t *table) add(rt *route) (err *value.Error) {
	defer func() {
		if r := recover(); r != nil {
			// The mux names its own source lines: not the user's business.
			msg := registeredAt.ReplaceAllString(fmt.Sprint(r), "")
			// It names the other pattern, not whose it is: name the route.
			if m := conflictsWith.FindStringSubmatchIndex(msg); m != nil {
				if other, ok := t.owner[msg[m[2]:m[3]]]; ok {
					msg = msg[:m[0]] + fmt.Sprintf("conflicts with route %s's pattern %q", other, msg[m[2]:m[3]]) + msg[m[1]:]
				}
			}
			err = value.NewError(value.KindInvalid, "%s", strings.ReplaceAll(msg, ":\n", ": "))
		}
	}()
	for _, p := range rt.spec.patterns() {
		t.mux.Handle(p, rt)
		t.owner[p] = rt.id
	}
	t.routes = append(t.routes, rt)
	return nil
}

// ServeHTTP serves a request by the route table in force. The mux
// matches it once: a route unwraps the dispatch and serves on w; what the
// mux answers itself when no route matched (404, 405 with Allow, a
// redirect to the clean path) is kept in the dispatch and given in JSON.
func (s *Server) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	markBusy(r)
	d := dispatches.Get().(*dispatch)
	d.w = w
	d.start = time.Now()
	s.table.Load().mux.ServeHTTP(d, r)
	if !d.routed {
		s.unrouted(w, r, d, d.start)
	}
	*d = dispatch{}
	dispatches.Put(d)
}

// unrouted answers, in JSON, what the mux said of a request no route
// matched.
func (s *Server) unrouted(w nethttp.ResponseWriter, r *nethttp.Request, d *dispatch, start time.Time) {
	status := d.code
	switch {
	case status == nethttp.StatusNotFound:
		errorResponse(status, value.NewError(value.KindNotFound, "no route for %s", clip(r.URL.Path, 256))).write(w)
	case status == nethttp.StatusMethodNotAllowed:
		if a := d.Header().Get("Allow"); a != "" {
			w.Header().Set("Allow", a)
		}
		errorResponse(status, value.NewError(value.KindInvalid, "method %s is not allowed here", clip(r.Method, 32))).write(w)
	case status == nethttp.StatusBadRequest && r.RequestURI == "*":
		// The mux's one 400: a request for "*" by another method than
		// OPTIONS (net/http answers OPTIONS * itself). It closes the
		// connection, as the mux asks.
		w.Header().Set("Connection", "close")
		if r.Method == "PRI" {
			// HTTP/2's preface (PRI * HTTP/2.0), which net/http passes
			// on when it does not serve unencrypted HTTP/2.
			status = nethttp.StatusHTTPVersionNotSupported
			errorResponse(status, value.NewError(value.KindInvalid, "HTTP/2 is not offered: the server speaks HTTP/1.1")).write(w)
			break
		}
		errorResponse(status, value.NewError(value.KindInvalid, "the request target * is only for OPTIONS")).write(w)
	default:
		for k, vs := range d.Header() {
			if k == "Location" || k == "Allow" {
				w.Header()[k] = vs
			}
		}
		w.WriteHeader(status)
	}
	s.m.duration.WithLabelValues(string(s.id), "", methodLabel(r.Method), statusLabel(status)).Observe(time.Since(start).Seconds())
}

// dispatch is the ResponseWriter the mux is given. A route takes w out
// of it (see route.ServeHTTP); otherwise it records what the mux answers.
// It lives for one ServeHTTP and is pooled.
type dispatch struct {
	w      nethttp.ResponseWriter
	start  time.Time // when the request was given to the server
	routed bool
	h      nethttp.Header // made when the mux answers
	code   int
}

var dispatches = sync.Pool{New: func() any { return new(dispatch) }}

// writer is the connection's writer when w is a dispatch, which a
// route then serves, and when the server was given the request (one
// clock read serves both the mux and the route); else w and now.
func writer(w nethttp.ResponseWriter) (nethttp.ResponseWriter, time.Time) {
	if d, ok := w.(*dispatch); ok {
		d.routed = true
		return d.w, d.start
	}
	return w, time.Now()
}

func (d *dispatch) Header() nethttp.Header {
	if d.h == nil {
		d.h = nethttp.Header{}
	}
	return d.h
}

func (d *dispatch) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}

func (d *dispatch) Write(b []byte) (int, error) {
	if d.code == 0 {
		d.code = nethttp.StatusOK
	}
	return len(b), nil
}

// serverProc is the process that stands for the server.
type serverProc struct{ s *Server }

func (serverProc) Receive(process.Context, process.Message) {}

func (p serverProc) Terminate(process.Context, process.Exit) { go p.s.halt() }
