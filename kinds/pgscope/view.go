package pgscope

import "sort"

// GroupView is one group in the scope's JSON view.
type GroupView struct {
	Name    string   `json:"name"`
	Members []string `json:"members"`
	Local   int      `json:"local"`
	// Nodes counts the members of each node (every join), this node's
	// included.
	Nodes map[string]int `json:"nodes"`
}

// ScopeView is what GET /v1 shows of a scope.
type ScopeView struct {
	ID      string      `json:"id"`
	PID     string      `json:"pid"`
	Running bool        `json:"running"`
	Groups  []GroupView `json:"groups"`
	Limits  LimitsView  `json:"limits"`
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
// on the loop.
func (s *Scope) View() any {
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
	s.root.Load().eachGroup(func(name string, v *groupView) {
		g := GroupView{Name: name, Members: make([]string, len(v.all)), Local: len(v.local), Nodes: map[string]int{}}
		for i, p := range v.all {
			g.Members[i] = p.String()
			g.Nodes[p.Node]++
		}
		out.Groups = append(out.Groups, g)
	})
	if d := s.peering(); d != nil {
		out.Peers = d.View()
	}
	sort.Slice(out.Groups, func(i, j int) bool { return out.Groups[i].Name < out.Groups[j].Name })
	return out
}

// EventCount returns how many membership events the scope has raised
// (see ScopeView.Events).
func (s *Scope) EventCount() uint64 { return s.events.Load() }
