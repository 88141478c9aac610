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
