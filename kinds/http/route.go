package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
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
}

func (rt *route) init() {
	if rt.active == nil {
		rt.active = rt.s.m.active.WithLabelValues(rt.spec.Path)
		rt.oversized = rt.s.m.oversized.WithLabelValues(rt.spec.Path)
	}
}

// ServeHTTP turns the request into an ask to the route's target and its
// reply into the response.
func (rt *route) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	w = writer(w)
	start := time.Now()
	rt.active.Inc()
	resp := rt.serve(w, r)
	resp.write(w)
	rt.active.Dec()
	rt.s.m.duration.WithLabelValues(rt.spec.Path, methodLabel(r.Method), statusLabel(resp.Status)).Observe(time.Since(start).Seconds())
}

func (rt *route) serve(w nethttp.ResponseWriter, r *nethttp.Request) *Response {
	max := rt.s.spec.Load().MaxBody
	if r.ContentLength > max {
		// Not read: the server closes the connection after the answer
		// rather than drain a body this large.
		rt.oversized.Inc()
		w.Header().Set("Connection", "close")
		return errorResponse(nethttp.StatusRequestEntityTooLarge, value.NewError(value.KindLimit, "the body is larger than %d bytes", max))
	}
	var body []byte
	if r.ContentLength != 0 {
		var err error
		body, err = io.ReadAll(nethttp.MaxBytesReader(w, r.Body, max))
		if err != nil {
			var mbe *nethttp.MaxBytesError
			if errors.As(err, &mbe) {
				rt.oversized.Inc()
				return errorResponse(nethttp.StatusRequestEntityTooLarge, value.NewError(value.KindLimit, "the body is larger than %d bytes", max))
			}
			w.Header().Set("Connection", "close")
			return errorResponse(nethttp.StatusBadRequest, value.NewError(value.KindInvalid, "reading the body: %v", err))
		}
	}
	payload, err := RequestPayload(r, body, rt.spec.params, rt.spec.Key)
	if err != nil {
		return ErrorResponse(err)
	}
	reply, err := rt.ask(r.Context(), payload)
	if errors.Is(err, process.ErrExited) {
		// Why it died (a script's error, its file and line) is for the
		// log, not for the client.
		rt.s.log.Warn("http route: the handler exited before it replied", "route", string(rt.id), "error", clip(err.Error(), maxErrorMessage))
		return errorResponse(StatusOf(err), value.NewError(value.KindStopped, "the handler exited before it replied"))
	}
	if err != nil {
		return ErrorResponse(err)
	}
	resp, err := ReplyResponse(reply)
	if err != nil {
		rt.s.log.Warn("http route: the handler's reply is no response", "route", string(rt.id), "error", err)
		return ErrorResponse(err)
	}
	return resp
}

// ask sends the request to the route's target and waits for the reply,
// the route's timeout, or the client to go away.
func (rt *route) ask(ctx context.Context, payload map[string]any) (any, error) {
	spec := rt.spec
	env := rt.s.env
	m := process.Message{Topic: Topic, Payload: payload}
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
		v, _, err := r.AskContext(ctx, m, spec.Timeout)
		return v, err
	case partitionKind:
		sup, err := registry.Find[*supervisor.Supervisor](env, "supervisor", string(spec.To), supervisor.KindPartition)
		if err != nil {
			return nil, err
		}
		pid, err := sup.Route(payload["key"])
		if err != nil {
			return nil, value.Wrap(value.NewError(value.KindStopped, "%v", err), "no worker", nil)
		}
		return rt.askPID(ctx, pid, m)
	}
	pid, ok := rt.s.node.Whereis(string(spec.To))
	if !ok {
		return nil, fmt.Errorf("route %s: %s: %w", rt.id, spec.To, process.ErrNameNotFound)
	}
	return rt.askPID(ctx, pid, m)
}

// askPID asks pid, giving up at the route's timeout or when ctx ends.
func (rt *route) askPID(ctx context.Context, pid process.PID, m process.Message) (any, error) {
	timeout := rt.spec.Timeout
	c := process.NewCall()
	if err := rt.s.node.Send(pid, c.MessageWithin(m, timeout)); err != nil {
		r, err := c.Abandon(err)
		if err != nil {
			return nil, err
		}
		return r.Value, r.Err
	}
	r, err := c.Wait(timeout, ctx.Done())
	switch {
	case errors.Is(err, process.ErrTimeout):
		return nil, fmt.Errorf("route %s: %s did not reply within %s: %w", rt.id, rt.spec.To, timeout, err)
	case err != nil:
		return nil, fmt.Errorf("route %s: the client went away: %w", rt.id, err)
	}
	return r.Value, r.Err
}
