package main

import (
	"sync/atomic"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/pgdist"
)

// pgCluster hands every pg scope the runner starts (at start-up or by a
// reload) to the cluster's pg distribution. The kinds are made before the
// cluster starts (the configuration is read first), so the distribution
// is set once it runs; scopes start only after that. Without clustering
// each scope is this node's alone.
type pgCluster struct {
	d atomic.Pointer[pgdist.Distributor]
}

func (p *pgCluster) Attach(s *pgscope.Scope) (pgscope.Peering, error) {
	if d := p.d.Load(); d != nil {
		return d.Attach(s)
	}
	return nil, nil
}
