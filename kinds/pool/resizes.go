package pool

import "time"

// ResizeHistory is how many changes of size a pool's view keeps.
const ResizeHistory = 16

// ResizeDecision is one change of a pool's size: by its resizer, or by a
// reload that changed its size ("update").
type ResizeDecision struct {
	Time time.Time `json:"time"`
	From int       `json:"from"`
	To   int       `json:"to"`
	By   string    `json:"by"`
}

// noteResize records a change of size for the view; on the pool's loop.
func (p *Pool) noteResize(from, to int, by string) {
	if len(p.resizes) == ResizeHistory {
		// The slice is copied into each view, never shared: shift in place.
		copy(p.resizes, p.resizes[1:])
		p.resizes = p.resizes[:ResizeHistory-1]
	}
	p.resizes = append(p.resizes, ResizeDecision{Time: time.Now(), From: from, To: to, By: by})
}
