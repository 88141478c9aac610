// Package http is HTTP ingress: the http.server and http.route entry
// kinds. A server binds a listener (optionally TLS) and serves the routes
// that name it; a route turns each request it matches into an ask with
// topic http.request to its target — a process.lua entry's registered
// process, a router.pool, a router.group or a supervisor.partition — and
// the reply into the response.
//
// The package knows nothing of Lua: a request is a value of the value
// model (see RequestPayload) and a reply is read from one (see
// WriteReply), whatever runs behind the target.
//
// One goroutine owns a server's routes and listeners (its loop); request
// handlers read the route table it publishes atomically, so a route added,
// changed or removed takes effect on the next request and no connection is
// dropped. A change of listen or tls rebinds: the new listener accepts
// before the old one stops, and requests in flight finish on the old one.
package http
