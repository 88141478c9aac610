package pgdist

import (
	"fmt"
	"testing"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
)

// Nodes that start together, each seeing all the others from the start
// and joining as soon as its scope runs, hold the same members without
// anti-entropy (disabled here): the sends that failed while a node was not
// up yet (opening its breaker, spending its retries) start afresh once it
// speaks or announces its scope.
func TestSimultaneousStartConverges(t *testing.T) {
	mp := newMemPG(t, func(s *pgscope.Spec) { s.AntiEntropyInterval = 0 })
	mp.quiet = true
	const n = 24
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("s%02d", i)
	}
	mp.c.connect(names...)
	var all []process.PID
	for _, name := range names {
		mp.add(name, true)
		pid := mp.spawn(name)
		if err := mp.nodes[name].s.Join(pid, "g"); err != nil {
			t.Fatal(err)
		}
		all = append(all, pid)
	}
	mp.waitMembers("g", all, names...)
}
