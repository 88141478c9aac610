package supervisor

import (
	"time"

	"github.com/proctor-run/proctor/registry"
)

// TreeView is the JSON view of a supervision tree (GET /v1/supervisors).
type TreeView struct {
	ID            string      `json:"id"`
	Kind          string      `json:"kind"`
	PID           string      `json:"pid"`
	Status        Status      `json:"status"`
	Strategy      Strategy    `json:"strategy"`
	MaxRestarts   int         `json:"max_restarts"`
	RestartWindow string      `json:"restart_window"`
	MaxChildren   int         `json:"max_children,omitempty"`
	Partitions    int         `json:"partitions,omitempty"`
	Children      []ChildView `json:"children"`
	// ChildrenTotal counts the children; Truncated says that Children
	// holds only a page of them (registry.ViewPage, and MaxViewChildren).
	ChildrenTotal int  `json:"children_total"`
	Truncated     bool `json:"truncated,omitempty"`
}

// ChildView is one child in a TreeView; Tree is set for a running child
// that is itself a supervisor, unless the view stops at MaxViewDepth or
// MaxViewChildren: then Truncated is set instead.
type ChildView struct {
	ID        string      `json:"id"`
	Process   string      `json:"process"`
	PID       *string     `json:"pid"`
	Restart   RestartType `json:"restart"`
	Type      ChildType   `json:"type"`
	Status    Status      `json:"status"`
	Restarts  int         `json:"restarts"`
	LastExit  string      `json:"last_exit,omitempty"`
	Tree      *TreeView   `json:"tree,omitempty"`
	Truncated bool        `json:"truncated,omitempty"`
}

// MaxViewDepth is how many levels of nested supervisors a view shows
// below the one asked for (trees are acyclic, but a bound keeps a bug from
// hanging the HTTP handler). A running supervisor child past it is marked
// Truncated; Find its PID to view the rest.
const MaxViewDepth = 32

// MaxViewChildren bounds the children one view shows, all levels
// together: a dynamic supervisor of a million children, or partitions of
// partitions, would otherwise answer with hundreds of megabytes. Past it a
// level's children are cut (Truncated, with ChildrenTotal) and a
// supervisor child's tree is left out (its Truncated).
const MaxViewChildren = 10_000

// View returns the tree below s, from snapshots only: the default page.
func (s *Supervisor) View() any { return s.Tree() }

// ViewPage implements registry.PagedViewer: Offset and Limit select the
// children of s shown; below it each supervisor shows its first Limit
// children. Group and the group fields do not apply.
func (s *Supervisor) ViewPage(p registry.ViewPage) any {
	p = p.WithDefaults()
	budget := MaxViewChildren
	return s.tree(0, p.Offset, p.Limit, &budget)
}

// Tree returns the typed view of the tree below s (the default page).
func (s *Supervisor) Tree() *TreeView { return s.ViewPage(registry.ViewPage{}).(*TreeView) }

func (s *Supervisor) tree(depth, offset, limit int, budget *int) *TreeView {
	sn := s.snap.Load()
	all := sn.infos()
	from := min(offset, len(all))
	kids := all[from:min(from+min(limit, *budget), len(all))]
	*budget -= len(kids)
	v := &TreeView{
		ID: string(s.id), Kind: s.kind, PID: s.pid.String(), Status: sn.status,
		Strategy: sn.spec.Strategy, MaxRestarts: sn.spec.MaxRestarts,
		RestartWindow: sn.spec.RestartWindow.Round(time.Millisecond).String(),
		MaxChildren:   sn.spec.MaxChildren,
		Children:      make([]ChildView, 0, len(kids)),
		ChildrenTotal: len(all),
		Truncated:     len(kids) < len(all),
	}
	if s.kind == KindPartition {
		v.Partitions = len(all)
	}
	for _, c := range kids {
		cv := ChildView{ID: c.ID, Process: string(c.Process), Restart: c.Restart, Type: c.Type, Status: c.Status, Restarts: c.Restarts, LastExit: c.LastExit}
		if !c.PID.IsZero() {
			p := c.PID.String()
			cv.PID = &p
			if sub, ok := s.ByPID(c.PID); ok {
				if depth < MaxViewDepth && *budget > 0 {
					cv.Tree = sub.tree(depth+1, 0, limit, budget)
				} else {
					cv.Truncated = true
				}
			}
		}
		v.Children = append(v.Children, cv)
	}
	return v
}
