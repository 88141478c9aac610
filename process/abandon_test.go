package process

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
)

// TestKillReportsAbandoned: a goroutine that does not return after its
// process was killed is reported (a log line and a count), never silently
// left running; one that returns in time is not.
func TestKillReportsAbandoned(t *testing.T) {
	var logs testutil.SyncBuffer
	n := NewNode(Options{Name: "test", Logger: slog.New(slog.NewTextHandler(&logs, nil)), AbandonAfter: 20 * time.Millisecond})

	release := make(chan struct{})
	stuck, _ := n.SpawnFunc(func(p *Proc) (any, error) { <-release; return nil, nil }, SpawnOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if e, err := n.Stop(ctx, stuck); err != nil || !errors.Is(e.Err, ErrKilled) {
		t.Fatalf("stop = %+v, %v", e, err)
	}
	eventually(t, "the stuck process to be reported abandoned", func() bool {
		return n.Abandoned() == AbandonStats{Total: 1, Running: 1}
	})
	if l := logs.String(); !strings.Contains(l, "level=ERROR msg=\"process abandoned") || !strings.Contains(l, stuck.String()) {
		t.Fatalf("no abandon log line naming %s:\n%s", stuck, l)
	}
	close(release)
	eventually(t, "the abandoned goroutine's return to be seen", func() bool {
		return n.Abandoned() == AbandonStats{Total: 1, Running: 0}
	})
	if !strings.Contains(logs.String(), "returned at last") {
		t.Fatalf("the late return is not logged:\n%s", logs.String())
	}

	returned := make(chan struct{})
	prompt, _ := n.SpawnFunc(func(p *Proc) (any, error) {
		<-p.Context().Done()
		defer close(returned)
		return nil, nil
	}, SpawnOptions{})
	_ = n.Kill(prompt)
	<-returned
	time.Sleep(100 * time.Millisecond) // past AbandonAfter: nothing may be reported
	if got := n.Abandoned(); got.Total != 1 {
		t.Fatalf("a process that returned in time was reported: %+v", got)
	}
}
