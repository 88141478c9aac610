package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/kinds/pool"
	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// route is one route as the table holds it: immutable.
type route struct {
	id   registry.ID
	spec *RouteSpec
	s    *Server

	active    prometheus.Gauge
	oversized prometheus.Counter
	// pending counts the route's requests being served (see admit); a
	// changed route keeps its predecessor's, which its requests still in
	// flight count down.
	pending *atomic.Int64
	refused prometheus.Counter
	obs     atomic.Pointer[map[obsKey]prometheus.Observer] // see observe
}

func (rt *route) init() {
	if rt.active == nil {
		rt.active = rt.s.m.active.WithLabelValues(string(rt.s.id), rt.spec.Path)
		rt.oversized = rt.s.m.oversized.WithLabelValues(string(rt.s.id), rt.spec.Path)
		rt.refused = rt.s.m.refusedRequests.WithLabelValues(string(rt.s.id), rt.spec.Path)
	}
	if rt.pending == nil {
		rt.pending = new(atomic.Int64)
	}
	if rt.obs.Load() == nil {
		rt.obs.Store(&map[obsKey]prometheus.Observer{})
	}
}

// ServeHTTP turns the request into an ask to the route's target and its
// reply into the response.
func (rt *route) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	w, start := writer(w)
	rt.active.Inc()
	resp := rt.serve(w, r)
	held := rt.s.holdReply(w, &resp, string(rt.id))
	resp.write(w)
	if held > 0 {
		rt.s.sending.Add(-held)
	}
	rt.active.Dec()
	rt.observe(r.Method, resp.Status, time.Since(start))
}

func (rt *route) serve(w nethttp.ResponseWriter, r *nethttp.Request) Response {
	if !rt.admit() {
		return rt.overloaded()
	}
	defer rt.pending.Add(-1)
	max := rt.s.spec.Load().MaxBody
	if r.ContentLength > max {
		// Not read: the server closes the connection after the answer
		// rather than drain a body this large.
		rt.oversized.Inc()
		w.Header().Set("Connection", "close")
		return *errorResponse(nethttp.StatusRequestEntityTooLarge, value.NewError(value.KindLimit, "the body is larger than %d bytes", max))
	}
	body, err := readBody(w, r, max)
	if err != nil {
		var mbe *nethttp.MaxBytesError
		if errors.As(err, &mbe) {
			rt.oversized.Inc()
			return *errorResponse(nethttp.StatusRequestEntityTooLarge, value.NewError(value.KindLimit, "the body is larger than %d bytes", max))
		}
		w.Header().Set("Connection", "close")
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The connection's read deadline: say which setting cut it,
			// not the socket's addresses.
			return *errorResponse(nethttp.StatusRequestTimeout, value.NewError(value.KindTimeout, "the body did not arrive within read_timeout (%s)", rt.s.spec.Load().ReadTimeout))
		}
		return *errorResponse(nethttp.StatusBadRequest, value.NewError(value.KindInvalid, "reading the body: %v", err))
	}
	payload, err := RequestPayload(r, body, rt.spec.params, rt.spec.Key)
	if err != nil {
		return *ErrorResponse(err)
	}
	reply, err := rt.ask(r.Context(), payload)
	if errors.Is(err, process.ErrExited) {
		// Why it died (a script's error, its file and line) is for the
		// log, not for the client.
		resp, how := exitedResponse(err)
		rt.s.log.Warn("http route: the handler exited before it replied", "route", string(rt.id), "to", rt.spec.target(), "how", how, "error", clip(err.Error(), maxErrorMessage))
		return *resp
	}
	if err != nil {
		return *ErrorResponse(err)
	}
	// Straight into the connection's headers: w's header map is empty
	// here (the paths that set Connection returned above).
	resp, err := replyInto(reply, w.Header())
	if err != nil {
		rt.s.log.Warn("http route: the handler's reply is no response", "route", string(rt.id), "to", rt.spec.target(), "error", err)
		return *ErrorResponse(err)
	}
	resp.Header = nil // w's already: write has none to copy
	return resp
}

// observe records a served request in the duration histogram. The
// histogram's series of the route are kept by method and status, so a
// request costs no label lookup.
func (rt *route) observe(method string, status int, d time.Duration) {
	k := obsKey{methodLabel(method), status}
	o, ok := (*rt.obs.Load())[k]
	if !ok {
		o = rt.s.m.duration.WithLabelValues(string(rt.s.id), rt.spec.Path, k.method, statusLabel(status))
		for {
			cur := rt.obs.Load()
			next := make(map[obsKey]prometheus.Observer, len(*cur)+1)
			for k, v := range *cur {
				next[k] = v
			}
			next[k] = o
			if rt.obs.CompareAndSwap(cur, &next) {
				break
			}
		}
	}
	o.Observe(d.Seconds())
}

// obsKey names a series of a route's durations: methods are methodLabel's
// (bounded), statuses 100–599, so a route holds at most a few thousand.
type obsKey struct {
	method string
	status int
}

// bodyBufs are the buffers request bodies are read into; one larger than
// maxPooledBody is left to the collector.
var bodyBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBody = 64 << 10

// readBody reads r's body, at most limit bytes (a longer one is a
// *MaxBytesError, and the connection is closed after the answer). Its
// length is known and within limit, or unknown (chunked).
func readBody(w nethttp.ResponseWriter, r *nethttp.Request, limit int64) (string, error) {
	if r.ContentLength == 0 {
		return "", nil
	}
	bp := bodyBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledBody {
			bodyBufs.Put(bp)
		}
	}()
	if r.ContentLength > 0 {
		buf := slices.Grow((*bp)[:0], int(r.ContentLength))[:r.ContentLength]
		*bp = buf[:0]
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return "", err
		}
		return string(buf), nil
	}
	rd := nethttp.MaxBytesReader(w, r.Body, limit)
	buf := (*bp)[:0]
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(512, cap(buf)))
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			*bp = buf[:0]
			return string(buf), nil
		}
		if err != nil {
			*bp = buf[:0]
			return "", err
		}
	}
}

// ask sends the request to the route's target and waits for the reply,
// the route's timeout, or the client to go away.
func (rt *route) ask(ctx context.Context, payload value.Record) (any, error) {
	spec := rt.spec
	env := rt.s.env
	m := process.Message{Topic: Topic, Payload: payload}
	if spec.ToName != "" {
		return rt.askName(ctx, m)
	}
	e, ok := env.Entries.Entry(spec.To)
	if !ok {
		return nil, fmt.Errorf("route %s: %s: %w", rt.id, spec.To, registry.ErrNotRunning)
	}
	switch e.Kind {
	case pool.KindName, pool.GroupKindName:
		r, err := registry.Find[pool.Router](env, "router", string(spec.To), pool.KindName, pool.GroupKindName)
		if err != nil {
			return nil, err
		}
		// Routed with the route's own call, whose reply target the
		// router hands on (Send): so the reply may be a Record too.
		return rt.call(ctx, m, r.CallerTimeout(spec.Timeout), r.Send)
	case partitionKind:
		sup, err := registry.Find[*supervisor.Supervisor](env, "supervisor", string(spec.To), supervisor.KindPartition)
		if err != nil {
			return nil, err
		}
		pid, err := sup.Route(payload) // its key field, as value.Key reads it
		if err != nil {
			return nil, value.Wrap(value.NewError(value.KindStopped, "%v", err), "no worker", nil)
		}
		return rt.askPID(ctx, pid, m)
	}
	pid, ok := rt.s.node.Whereis(string(spec.To))
	if !ok {
		// The entry is declared but its process is not up (starting,
		// restarting, stopped): "not running", as above, not the name
		// lookup's "no process registered", which reads as a typo.
		return nil, fmt.Errorf("route %s: %s: %w", rt.id, spec.To, registry.ErrNotRunning)
	}
	return rt.askPID(ctx, pid, m)
}

// askPID asks pid, giving up at the route's timeout or when ctx ends.
func (rt *route) askPID(ctx context.Context, pid process.PID, m process.Message) (any, error) {
	return rt.call(ctx, m, rt.spec.Timeout, func(m process.Message) error { return rt.s.node.Send(pid, m) })
}

// call sends m, as an ask, by send, and waits for the reply at most
// timeout (the route's, or a router's for it) or until ctx ends. The
// reply may be a value.Record (a Lua handler's table; replyInto reads
// it): no Go map is built only to be read once.
func (rt *route) call(ctx context.Context, m process.Message, timeout time.Duration, send func(process.Message) error) (any, error) {
	c := process.NewCall()
	c.AcceptRecord()
	if err := send(c.MessageWithin(m, timeout)); err != nil {
		r, err := c.Abandon(err)
		if err != nil {
			return nil, err
		}
		return r.Value, r.Err
	}
	r, err := c.Wait(timeout, ctx.Done())
	switch {
	case errors.Is(err, process.ErrTimeout):
		return nil, fmt.Errorf("route %s: %s did not reply within %s: %w", rt.id, rt.spec.target(), timeout, err)
	case err != nil:
		return nil, fmt.Errorf("route %s: the client went away: %w", rt.id, err)
	}
	return r.Value, r.Err
}
