package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// A child's id and name are labels, as a registered name is: the id is
// kept in the views, the log lines and a metric label
// (supervisor_restarts_total{child}). A script's start_child with a
// 4 MiB id put 4 MiB into /metrics and /v1/supervisors (issue 22). Past
// process.MaxNameSize both are a limit error that does not quote them.
func TestStartChildBoundsIDAndName(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:dyn", &Spec{Kind: KindDynamic})
	ctx := context.Background()
	long := strings.Repeat("i", 1<<20)
	for _, spec := range []ChildSpec{
		{ID: long, Process: "t:w"},
		{ID: "a", Name: long, Process: "t:w"},
	} {
		_, err := s.StartChild(ctx, spec)
		if msg := fmt.Sprint(err); !errors.Is(err, process.ErrTooLong) || value.KindOf(err) != value.KindLimit || len(msg) > 1024 {
			t.Errorf("%.100s (%d bytes)", msg, len(msg))
		}
	}
	if hasChild(s, long) || hasChild(s, "a") {
		t.Fatal("a refused child was added")
	}
	ok := strings.Repeat("i", process.MaxNameSize)
	if _, err := s.StartChild(ctx, ChildSpec{ID: ok, Name: ok, Process: "t:w"}); err != nil {
		t.Fatalf("an id and a name of MaxNameSize: %v", err)
	}
}
