package pgscope

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/proctor-run/proctor/registry"
)

// A large scope's view is cut to a page, with the totals and the
// truncation marker, so GET /v1/pg of a million members stays small.
func TestViewIsPaged(t *testing.T) {
	h := newHarness(t, nil)
	a, b := h.pid(), h.pid()
	const members = registry.DefaultViewLimit + 500
	for range members / 2 {
		h.must(h.s.Join(a, "big"))
		h.must(h.s.Join(b, "big"))
	}
	h.must(h.s.Join(a, "small", "other"))
	h.sync()

	v := h.s.View().(ScopeView)
	if v.GroupsTotal != 3 || v.Truncated || len(v.Groups) != 3 {
		t.Fatalf("groups: total %d, truncated %v, %d shown", v.GroupsTotal, v.Truncated, len(v.Groups))
	}
	big := v.Groups[0]
	if big.Name != "big" || big.Total != members || !big.Truncated || len(big.Members) != registry.DefaultViewLimit || big.Nodes[h.node.Name()] != members {
		t.Fatalf("big: %s total %d truncated %v members %d nodes %v", big.Name, big.Total, big.Truncated, len(big.Members), big.Nodes)
	}
	if small := v.Groups[2]; small.Name != "small" || small.Total != 1 || small.Truncated || len(small.Members) != 1 {
		t.Fatalf("small: %+v", small)
	}

	// The last page of one group.
	v = h.s.ViewPage(registry.ViewPage{Group: "big", Offset: members - 10, Limit: 100}).(ScopeView)
	if v.GroupsTotal != 1 || len(v.Groups) != 1 || len(v.Groups[0].Members) != 10 || !v.Groups[0].Truncated {
		t.Fatalf("last page: %+v", v)
	}
	// A page of groups.
	v = h.s.ViewPage(registry.ViewPage{GroupOffset: 1, GroupLimit: 1}).(ScopeView)
	if v.GroupsTotal != 3 || !v.Truncated || len(v.Groups) != 1 || v.Groups[0].Name != "other" {
		t.Fatalf("group page: total %d truncated %v groups %+v", v.GroupsTotal, v.Truncated, v.Groups)
	}
	// Its JSON carries the markers.
	b2, _ := json.Marshal(h.s.View())
	var m map[string]any
	json.Unmarshal(b2, &m)
	g := m["groups"].([]any)[0].(map[string]any)
	if g["truncated"] != true || g["total"] != float64(members) || m["groups_total"] != 3.0 {
		t.Fatalf("JSON: %v %v %v", g["truncated"], g["total"], m["groups_total"])
	}
}

// A page shows at most registry.MaxViewMembers members over all its
// groups, however the groups and members are paged: the groups past the
// budget are listed with their totals and no members.
func TestViewPageMemberBudget(t *testing.T) {
	h := newHarness(t, nil)
	groups := make([]string, registry.MaxViewMembers/registry.MaxViewLimit+2)
	for i := range groups {
		groups[i] = fmt.Sprintf("g%03d", i)
	}
	p := h.pid()
	for range registry.MaxViewLimit {
		h.must(h.s.Join(p, groups...))
	}
	h.sync()
	v := h.s.ViewPage(registry.ViewPage{GroupLimit: registry.MaxViewLimit, Limit: registry.MaxViewLimit}).(ScopeView)
	shown := 0
	for _, g := range v.Groups {
		shown += len(g.Members)
	}
	last := v.Groups[len(v.Groups)-1]
	if len(v.Groups) != len(groups) || shown != registry.MaxViewMembers || !last.Truncated || len(last.Members) != 0 || last.Total != registry.MaxViewLimit {
		t.Fatalf("%d groups, %d members shown, last %s: %d of %d (truncated %v)", len(v.Groups), shown, last.Name, len(last.Members), last.Total, last.Truncated)
	}
}
