package supervisor

import "time"

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
}

// ChildView is one child in a TreeView; Tree is set for a running child
// that is itself a supervisor, unless the view stops at MaxViewDepth:
// then Truncated is set instead.
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

// View returns the tree below s, from snapshots only.
func (s *Supervisor) View() any { return s.Tree() }

// Tree returns the typed view of the tree below s.
func (s *Supervisor) Tree() *TreeView { return s.tree(0) }

func (s *Supervisor) tree(depth int) *TreeView {
	sn := s.snap.Load()
	kids := sn.infos()
	v := &TreeView{
		ID: string(s.id), Kind: s.kind, PID: s.pid.String(), Status: sn.status,
		Strategy: sn.spec.Strategy, MaxRestarts: sn.spec.MaxRestarts,
		RestartWindow: sn.spec.RestartWindow.Round(time.Millisecond).String(),
		MaxChildren:   sn.spec.MaxChildren,
		Children:      make([]ChildView, 0, len(kids)),
	}
	if s.kind == KindPartition {
		v.Partitions = len(kids)
	}
	for _, c := range kids {
		cv := ChildView{ID: c.ID, Process: string(c.Process), Restart: c.Restart, Type: c.Type, Status: c.Status, Restarts: c.Restarts, LastExit: c.LastExit}
		if !c.PID.IsZero() {
			p := c.PID.String()
			cv.PID = &p
			if sub, ok := s.ByPID(c.PID); ok {
				if depth < MaxViewDepth {
					cv.Tree = sub.tree(depth + 1)
				} else {
					cv.Truncated = true
				}
			}
		}
		v.Children = append(v.Children, cv)
	}
	return v
}
