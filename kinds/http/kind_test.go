package http

import (
	"strings"
	"testing"

	"github.com/proctor-run/proctor/kinds/pool"
	"github.com/proctor-run/proctor/registry"
)

// CheckRefs asks a route for a key exactly when its target needs one to
// pick a worker or routee: a supervisor.partition, or a consistent_hash
// router.pool or router.group; not another strategy, not a route that
// has a key, and not one whose key was given but invalid (the decoder
// reported that already).
func TestCheckRefsWantsAKey(t *testing.T) {
	targets := map[registry.ID]*registry.Entry{
		"app:parts":   {ID: "app:parts", Kind: partitionKind},
		"app:chpool":  {ID: "app:chpool", Kind: pool.KindName, Spec: &pool.Spec{Strategy: pool.ConsistentHash}},
		"app:rrpool":  {ID: "app:rrpool", Kind: pool.KindName, Spec: &pool.Spec{Strategy: pool.RoundRobin}},
		"app:chgroup": {ID: "app:chgroup", Kind: pool.GroupKindName, Spec: &pool.GroupSpec{Strategy: pool.ConsistentHash}},
		"app:rrgroup": {ID: "app:rrgroup", Kind: pool.GroupKindName, Spec: &pool.GroupSpec{Strategy: pool.Random}},
	}
	cases := []struct {
		to   registry.ID
		spec RouteSpec
		want string // "" for no report
	}{
		{"app:parts", RouteSpec{}, "app:parts is a supervisor.partition: set key"},
		{"app:chpool", RouteSpec{}, "app:chpool is a consistent_hash router.pool: set key"},
		{"app:chgroup", RouteSpec{}, "app:chgroup is a consistent_hash router.group: set key"},
		{"app:rrpool", RouteSpec{}, ""},
		{"app:rrgroup", RouteSpec{}, ""},
		{"app:chpool", RouteSpec{Key: &KeySpec{Source: KeyPath, Name: "id"}}, ""},
		{"app:chgroup", RouteSpec{keyFailed: true}, ""},
	}
	for _, tc := range cases {
		spec := tc.spec
		spec.To = tc.to
		e := &registry.Entry{ID: "app:r", Kind: RouteKindName, Spec: &spec,
			Refs: []registry.Ref{{Field: "to", Pos: registry.Pos{File: "app.yaml", Line: 7, Col: 5}, To: tc.to}}}
		var got []string
		RouteKind{}.CheckRefs(e, func(id registry.ID) (*registry.Entry, bool) { t, ok := targets[id]; return t, ok },
			func(p registry.Pos, field, msg string) { got = append(got, p.String()+" "+field+": "+msg) })
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("to %s (%+v): reported %q", tc.to, tc.spec, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], "app.yaml:7:5 to: "+tc.want)):
			t.Errorf("to %s: reported %q, want %q", tc.to, got, tc.want)
		}
	}
}

// A RouteSpec built in Go without MaxPending gets the default bound, not
// a bound of 0 that would refuse every request.
func TestMaxPendingZeroIsDefault(t *testing.T) {
	if got := (&RouteSpec{}).maxPending(); got != DefaultMaxPending {
		t.Errorf("zero MaxPending: %d, want %d", got, DefaultMaxPending)
	}
	if got := (&RouteSpec{MaxPending: 3}).maxPending(); got != 3 {
		t.Errorf("MaxPending 3: %d", got)
	}
}

// TestCheckSetReportsEachConflictOnce: CheckSet goes through a server's
// routes once, in ID order; each route whose pattern conflicts with an
// earlier one is reported once, at its path, naming the route it
// conflicts with, and routes of another server are not compared.
func TestCheckSetReportsEachConflictOnce(t *testing.T) {
	route := func(id, server, path string, line int) *registry.Entry {
		return &registry.Entry{ID: registry.ID(id), Kind: RouteKindName, Pos: registry.Pos{File: "app.yaml", Line: line - 1},
			Spec: &RouteSpec{Server: registry.ID(server), Path: path, pathAt: registry.Pos{File: "app.yaml", Line: line, Col: 11}}}
	}
	entries := []*registry.Entry{
		route("app:a", "app:web", "/x", 10),
		route("app:b", "app:web", "/x", 20),
		route("app:c", "app:web", "/x", 30),
		route("app:d", "app:other", "/x", 40),
		route("app:e", "app:web", "/y", 50),
	}
	var got []string
	RouteKind{}.CheckSet(entries, func(e *registry.Entry, pos registry.Pos, field, msg string) {
		got = append(got, pos.String()+" "+string(e.ID)+" "+field+": "+msg)
	})
	if len(got) != 2 {
		t.Fatalf("reports: %q, want one for app:b and one for app:c", got)
	}
	for i, want := range []string{`app.yaml:20:11 app:b path: pattern "/x" conflicts with route app:a's pattern "/x"`, `app.yaml:30:11 app:c path: pattern "/x" conflicts with route app:a's pattern "/x"`} {
		if !strings.HasPrefix(got[i], want) {
			t.Errorf("report %d: %q, want it to start %q", i, got[i], want)
		}
	}
}
