package main

import (
	"fmt"

	"github.com/proctor-run/proctor/observe"
)

// ops are the HTTP endpoint's optional parts for this run.
func (a *app) ops(of *opsFlags) observe.Ops {
	return observe.Ops{
		Node: a.node, DeadLetters: a.dead, Reloads: a.rt,
		Token: of.token, Pprof: of.pprof, Live: a.live,
	}
}

// live is /livez: the node is alive while its root supervisor runs (the
// runner stops once it died).
func (a *app) live() error {
	select {
	case <-a.root.Done():
		return fmt.Errorf("the root supervisor died: %v", a.root.Exit().Err)
	default:
		return nil
	}
}
