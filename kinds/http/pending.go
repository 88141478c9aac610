package http

import (
	nethttp "net/http"

	"github.com/proctor-run/proctor/value"
)

// A route bounds the requests it serves at once (max_pending): each holds
// its body, up to max_body, from when it is read until its reply comes,
// so a flood at a slow target cannot grow the node's memory past
// max_pending × max_body a route, whatever max_connections allows. Past
// the bound a request gets 429 limit at once, its body unread, and
// http_server_refused_requests_total counts it: a client backs off
// instead of queueing behind a target that cannot keep up. (The server
// speaks HTTP/1.1 only, one request at a time on a connection, so a
// server's requests in flight are at most its max_connections.)

// admit counts a request in, unless the route already serves max_pending;
// an admitted request counts itself out when it is answered.
func (rt *route) admit() bool {
	if rt.pending.Add(1) > int64(rt.spec.maxPending()) {
		rt.pending.Add(-1)
		return false
	}
	return true
}

// overloaded is the answer to a request past max_pending.
func (rt *route) overloaded() Response {
	rt.refused.Inc()
	return *errorResponse(nethttp.StatusTooManyRequests, value.NewError(value.KindLimit,
		"route %s is serving max_pending (%d) requests: try again later", rt.id, rt.spec.maxPending()))
}
