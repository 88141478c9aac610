package pool

import (
	"slices"

	"github.com/proctor-run/proctor/process"
)

// View is the JSON view of a pool under /v1 (GET /v1/entries/{id}).
type View struct {
	ID           string       `json:"id"`
	Routee       string       `json:"routee"`
	Strategy     string       `json:"strategy"`
	Size         int          `json:"size"`
	Routees      []string     `json:"routees"`
	Timeout      string       `json:"timeout"`
	Interval     string       `json:"interval,omitempty"`
	Resizer      *ResizerView `json:"resizer,omitempty"`
	OpenScatters int64        `json:"open_scatters"`
	Routed       uint64       `json:"messages_counted"`
	Stopping     bool         `json:"stopping"`
	// Mailboxes are the live routees' mailboxes, in slot order.
	Mailboxes []process.MailboxStats `json:"mailboxes"`
	// Resizes are the latest changes of size (at most ResizeHistory),
	// oldest first.
	Resizes []ResizeDecision `json:"resizes"`
}

// ResizerView shows a resizer's settings.
type ResizerView struct {
	Type       string `json:"type"`
	LowerBound int    `json:"lower_bound"`
	UpperBound int    `json:"upper_bound"`
}

// View returns the pool's state; it reads snapshots, never waits on the
// pool's loop.
func (p *Pool) View() any {
	v := *p.view.Load()
	v.OpenScatters = p.nOpen.Load()
	v.Routed = p.counter.Load()
	v.Stopping = p.stopping.Load()
	pids := p.snap.Load().pids
	v.Mailboxes = make([]process.MailboxStats, 0, len(pids))
	for _, pid := range pids {
		if st, ok := p.node.Mailbox(pid); ok {
			v.Mailboxes = append(v.Mailboxes, st)
		}
	}
	return v
}

// Size returns how many routees the pool has (those waiting for a restart
// included).
func (p *Pool) Size() int { return p.snap.Load().size }

// Routees returns the PIDs of the live routees, in slot order.
func (p *Pool) Routees() []string {
	s := p.snap.Load()
	out := make([]string, len(s.pids))
	for i, pid := range s.pids {
		out[i] = pid.String()
	}
	return out
}

// publishView rebuilds the view; on the pool's loop.
func (p *Pool) publishView() {
	c := p.cfg.Load()
	v := &View{
		ID: string(p.id), Routee: string(p.spec.Routee), Strategy: string(c.strategy),
		Size: p.snap.Load().size, Routees: p.Routees(), Timeout: c.timeout.String(),
		Resizes: slices.Clone(p.resizes),
	}
	if v.Resizes == nil {
		v.Resizes = []ResizeDecision{}
	}
	if c.strategy == TailChopping {
		v.Interval = c.interval.String()
	}
	if p.rz != nil {
		s := p.rz.spec()
		v.Resizer = &ResizerView{Type: string(s.Type), LowerBound: s.LowerBound, UpperBound: s.UpperBound}
	}
	p.view.Store(v)
}
