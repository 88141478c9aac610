package http

import (
	"github.com/proctor-run/proctor/internal/words"
)

// ServerView is the JSON view of a server under /v1 (GET /v1/entries/{id}).
type ServerView struct {
	ID             string `json:"id"`
	Addr           string `json:"addr"`
	TLS            bool   `json:"tls"`
	MaxBody        int64  `json:"max_body"`
	MaxConnections int    `json:"max_connections"`
	Connections    int    `json:"connections"`
	// MaxReplyBytes is the bound on large reply bodies held while they
	// are sent; Sending the bytes of those being sent now.
	MaxReplyBytes int64       `json:"max_reply_bytes"`
	Sending       int64       `json:"sending"`
	Routes        []RouteView `json:"routes"`
}

// RouteView is one route of a server's view, and a route's own view.
type RouteView struct {
	ID      string   `json:"id"`
	Methods []string `json:"methods"`
	Path    string   `json:"path"`
	To      string   `json:"to"`
	ToName  string   `json:"to_name,omitempty"`
	Key     string   `json:"key,omitempty"`
	Timeout string   `json:"timeout"`
	Server  string   `json:"server"`
	// MaxPending is the route's bound; Pending its requests being served.
	MaxPending int   `json:"max_pending"`
	Pending    int64 `json:"pending"`
}

// View implements registry.Viewer; it reads snapshots.
func (s *Server) View() any {
	spec := s.spec.Load()
	v := ServerView{ID: string(s.id), Addr: s.Addr(), TLS: spec.TLS != nil, MaxBody: spec.MaxBody,
		MaxConnections: spec.MaxConnections, MaxReplyBytes: spec.maxReplyBytes(), Sending: s.sending.Load(), Routes: []RouteView{}}
	t := s.table.Load()
	for _, rt := range t.routes {
		v.Routes = append(v.Routes, routeView(rt))
	}
	v.Connections = s.conns()
	return v
}

// conns counts the connections of the binding in force.
func (s *Server) conns() int {
	if b := s.bound.Load(); b != nil {
		return b.lim.Open()
	}
	return 0
}

func routeView(rt *route) RouteView {
	spec := rt.spec
	v := RouteView{ID: string(rt.id), Methods: spec.Methods, Path: spec.Path, To: string(spec.To), ToName: spec.ToName,
		Timeout: words.Duration(spec.Timeout), Server: string(rt.s.id), MaxPending: spec.maxPending(), Pending: rt.pending.Load()}
	if v.Methods == nil {
		v.Methods = []string{}
	}
	if spec.Key != nil {
		v.Key = spec.Key.String()
	}
	return v
}

// View implements registry.Viewer.
func (r *Route) View() any {
	for _, rt := range r.server.table.Load().routes {
		if rt.id == r.id {
			return routeView(rt)
		}
	}
	return map[string]string{"id": string(r.id), "status": "not in its server's table"}
}
