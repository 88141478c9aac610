package observe

import (
	"net/http"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// Ops are the endpoint's optional parts: the live view, the message and
// ops endpoints. Every zero field leaves its part off or at its default.
type Ops struct {
	// Node is the node the runtime runs on: the sender of POST /v1/send
	// and /v1/ask (which answer 503 without it), and where the live view
	// reads process counts and mailboxes.
	Node *process.Node
	// DeadLetters is what GET /v1/dead-letters and the live view show.
	DeadLetters *DeadLetters
	// Reloads is the reload history the live view shows.
	Reloads ReloadHistory
	// Token is the bearer token of the state-changing endpoints. Empty:
	// they are off and answer 405.
	Token string
	// MaxRequestBytes bounds a request body. Default:
	// DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxReplyBytes bounds the JSON of the reply POST /v1/ask answers
	// with; a larger reply is refused (502). Default:
	// DefaultMaxReplyBytes.
	MaxReplyBytes int
	// Live is the liveness check of /livez (the root supervisor runs).
	// Nil: alive while the endpoint serves.
	Live func() error
	// Pprof mounts net/http/pprof under /debug/pprof/.
	Pprof bool
	// UI bounds the live view at /ui.
	UI UIOptions
}

type server struct {
	opts     Options
	token    tokenDigest
	maxBody  int64
	maxReply int
	sender   *sender // nil without a node
	hub      *hub
	rates    rates
}

func newServer(opts Options) *server {
	s := &server{opts: opts, token: newTokenDigest(opts.Token), maxBody: opts.MaxRequestBytes, rates: rates{samples: map[registry.ID][]rateSample{}}}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxRequestBytes
	}
	if s.maxReply = opts.MaxReplyBytes; s.maxReply <= 0 {
		s.maxReply = DefaultMaxReplyBytes
	}
	if opts.Node != nil {
		s.sender = &sender{node: opts.Node}
	}
	s.hub = newHub(opts.UI, s.stateJSON)
	return s
}

// mountOps adds the live view, the message and the ops endpoints.
func (s *server) mountOps(mux *http.ServeMux) http.Handler {
	mux.HandleFunc("GET /livez", s.livez)
	mux.HandleFunc("GET /v1/dead-letters", s.deadLetters)
	mux.HandleFunc("POST /v1/send", s.authorized(s.withNode(s.send)))
	mux.HandleFunc("POST /v1/ask", s.authorized(s.withNode(s.ask)))
	page, files := uiAssets()
	mux.Handle("GET /ui", page)
	mux.Handle("GET /ui/", files)
	mux.HandleFunc("GET /ui/events", s.hub.serve(s))
	// One state as JSON: the page's ?once mode, which draws it and opens no
	// stream, so a headless browser that waits for the network to go
	// quiet (chromium --screenshot) can return.
	mux.HandleFunc("GET /ui/state", s.uiStateOnce)
	if s.opts.Pprof {
		mountPprof(mux, s.tokenIfSet)
	}
	return &endpoint{Handler: mux, hub: s.hub}
}

// withNode answers 503 when there is no node to send from.
func (s *server) withNode(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.sender == nil {
			s.fail(w, http.StatusServiceUnavailable, "this endpoint has no node to send from")
			return
		}
		h(w, r)
	}
}

// endpoint is what Handler returns: the routes, and the live view's
// streams, which Listen ends when the server shuts down (a stream never
// goes idle, so Shutdown would otherwise wait for its deadline).
type endpoint struct {
	http.Handler
	hub *hub
}

// CloseStreams ends every open live view stream and refuses new ones.
func (e *endpoint) CloseStreams() { e.hub.close() }

// streamCloser is implemented by a handler with streams to end on
// shutdown.
type streamCloser interface{ CloseStreams() }
