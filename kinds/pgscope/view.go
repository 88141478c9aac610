package pgscope

import (
	"sort"

	"github.com/proctor-run/proctor/registry"
)

// GroupView is one group in the scope's JSON view.
type GroupView struct {
	Name    string   `json:"name"`
	Members []string `json:"members"`
	Local   int      `json:"local"`
	// Nodes counts the members of each node (every join), this node's
	// included.
	Nodes map[string]int `json:"nodes"`
	// Total counts the members; Truncated says that Members holds only
	// the page asked for (registry.ViewPage).
	Total     int  `json:"total"`
	Truncated bool `json:"truncated,omitempty"`
}

// ScopeView is what GET /v1 shows of a scope.
type ScopeView struct {
	ID      string      `json:"id"`
	PID     string      `json:"pid"`
	Running bool        `json:"running"`
	Groups  []GroupView `json:"groups"`
	// GroupsTotal counts the scope's groups (the one asked for, when a
	// page names one); Truncated says that Groups holds only a page.
	GroupsTotal int        `json:"groups_total"`
	Truncated   bool       `json:"truncated,omitempty"`
	Limits      LimitsView `json:"limits"`
	// Events counts the membership events (member.joined, member.left)
	// the scope has raised, local and remote, whether or not anyone
	// listened: its rate is the scope's churn.
	Events uint64 `json:"events"`
	// Node is this node's name.
	Node string `json:"node"`
	// Peers describes the other nodes' scopes of this entry, as the
	// cluster layer sees them (absent on a node that is not clustered).
	Peers any `json:"peers,omitempty"`
}

// LimitsView shows the limits in force.
type LimitsView struct {
	MaxGroups          int `json:"max_groups"`
	MaxMembersPerGroup int `json:"max_members_per_group"`
	ActionQueueSize    int `json:"action_queue_size"`
	ActionQueueMaxSize int `json:"action_queue_max_size"`
	MonitorBuffer      int `json:"monitor_buffer"`
	QueueDepth         int `json:"queue_depth"`
}

// View implements registry.Viewer from the published index; it never waits
// on the loop. It shows the default page: a scope of a million members
// would otherwise answer with hundreds of megabytes.
func (s *Scope) View() any { return s.ViewPage(registry.ViewPage{}) }

// ViewPage implements registry.PagedViewer: the groups and members p
// selects, with their totals. Only the members shown are copied.
func (s *Scope) ViewPage(p registry.ViewPage) any {
	p = p.WithDefaults()
	sp := s.spec.Load()
	out := ScopeView{
		ID:      string(s.id),
		PID:     s.pid.String(),
		Running: !s.stopped.Load(),
		Groups:  []GroupView{},
		Events:  s.events.Load(),
		Node:    s.node.Name(),
		Limits: LimitsView{
			MaxGroups:          sp.MaxGroups,
			MaxMembersPerGroup: sp.MaxMembersPerGroup,
			ActionQueueSize:    sp.ActionQueueSize,
			ActionQueueMaxSize: sp.ActionQueueMaxSize,
			MonitorBuffer:      sp.MonitorBuffer,
			QueueDepth:         s.loop.Len(),
		},
	}
	type named struct {
		name string
		v    *groupView
	}
	var views []named
	if p.Group != "" {
		if v := s.root.Load().get(hashGroup(p.Group), p.Group).view(); v != nil {
			views = append(views, named{p.Group, v})
		}
	} else {
		s.root.Load().eachGroup(func(name string, v *groupView) { views = append(views, named{name, v}) })
	}
	sort.Slice(views, func(i, j int) bool { return views[i].name < views[j].name })
	out.GroupsTotal = len(views)
	views, out.Truncated = page(views, p.GroupOffset, p.GroupLimit)
	budget := registry.MaxViewMembers
	for _, e := range views {
		v := e.v
		g := GroupView{Name: e.name, Local: v.nlocal, Nodes: map[string]int{}, Total: v.n}
		for _, m := range v.members() {
			g.Nodes[m.Node]++
		}
		shown, cut := page(v.members(), p.Offset, min(p.Limit, budget))
		budget -= len(shown)
		g.Truncated = cut
		g.Members = make([]string, len(shown))
		for i, m := range shown {
			g.Members[i] = m.String()
		}
		out.Groups = append(out.Groups, g)
	}
	if d := s.peering(); d != nil {
		out.Peers = d.View()
	}
	return out
}

// page returns the limit elements of list from offset, and whether that
// leaves any out.
func page[T any](list []T, offset, limit int) ([]T, bool) {
	n := len(list)
	from := min(offset, n)
	to := min(from+limit, n)
	return list[from:to], from > 0 || to < n
}

// EventCount returns how many membership events the scope has raised
// (see ScopeView.Events).
func (s *Scope) EventCount() uint64 { return s.events.Load() }
