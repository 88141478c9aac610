package http

import (
	"github.com/proctor-run/proctor/internal/words"
	"github.com/proctor-run/proctor/registry"
)

// ServerView is the JSON view of a server under /v1 (GET /v1/entries/{id}).
type ServerView struct {
	ID             string      `json:"id"`
	Addr           string      `json:"addr"`
	TLS            bool        `json:"tls"`
	MaxBody        int64       `json:"max_body"`
	MaxConnections int         `json:"max_connections"`
	Connections    int         `json:"connections"`
	Routes         []RouteView `json:"routes"`
}

// RouteView is one route of a server's view, and a route's own view.
type RouteView struct {
	ID      string   `json:"id"`
	Methods []string `json:"methods"`
	Path    string   `json:"path"`
	To      string   `json:"to"`
	Key     string   `json:"key,omitempty"`
	Timeout string   `json:"timeout"`
	Server  string   `json:"server"`
}

// View implements registry.Viewer; it reads snapshots.
func (s *Server) View() any {
	spec := s.spec.Load()
	v := ServerView{ID: string(s.id), Addr: s.Addr(), TLS: spec.TLS != nil, MaxBody: spec.MaxBody,
		MaxConnections: spec.MaxConnections, Routes: []RouteView{}}
	t := s.table.Load()
	for _, rt := range t.routes {
		v.Routes = append(v.Routes, routeView(rt.id, s.id, rt.spec))
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

func routeView(id, server registry.ID, spec *RouteSpec) RouteView {
	v := RouteView{ID: string(id), Methods: spec.Methods, Path: spec.Path, To: string(spec.To),
		Timeout: words.Duration(spec.Timeout), Server: string(server)}
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
			return routeView(r.id, r.server.id, rt.spec)
		}
	}
	return map[string]string{"id": string(r.id), "status": "not in its server's table"}
}
